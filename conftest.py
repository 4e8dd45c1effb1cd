# Shared fixtures live in tests/fixtures.py, so that tests beside the plugins can use them too.
pytest_plugins = ["tests.fixtures"]
