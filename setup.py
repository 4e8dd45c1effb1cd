"""The plugins keep their tests beside them (as kube-scheduler's do); a wheel carries none."""

from setuptools import setup
from setuptools.command.build_py import build_py


class WithoutTests(build_py):
    def find_package_modules(self, package: str, package_dir: str) -> list[tuple[str, str, str]]:
        found = super().find_package_modules(package, package_dir)
        return [m for m in found if not m[1].startswith("test_")]


setup(cmdclass={"build_py": WithoutTests})
