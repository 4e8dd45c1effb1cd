from shards.plugins.volume_binding.volume_binding import VolumeBinding
from shards.plugins.volume_binding.volume_binding_args import VolumeBindingArgs

__all__ = ["VolumeBinding", "VolumeBindingArgs"]
