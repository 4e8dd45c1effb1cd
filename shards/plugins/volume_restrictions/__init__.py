from shards.plugins.volume_restrictions.volume_restrictions import VolumeRestrictions

__all__ = ["VolumeRestrictions"]
