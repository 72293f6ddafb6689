# Our numbering starts at the upstream API level we implement (0.3.1), so version gates written
# for upstream nccl4py keep working.
__version__ = "0.3.1"
