"""Features and their types: continuous, categorical and ordered features,
their encoding and the kernels of the discrete ones."""
