from ._core import *  # noqa
