"""Bandwidths: the rules of thumb, the plug-in, how a bandwidth divides the
features (scaling), and the nearest-neighbour bandwidths of a span."""
