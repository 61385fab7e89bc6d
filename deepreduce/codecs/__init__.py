"""DeepReduce's codecs for sparse tensors: index codecs (``index``) and value codecs
(``value``), thin Python over the C core, used by ``deepreduce.wrappers``."""
from .index import POLICIES, index_codec
from .value import value_codec
from .workspace import Workspace

__all__ = ["index_codec", "value_codec", "POLICIES", "Workspace"]
