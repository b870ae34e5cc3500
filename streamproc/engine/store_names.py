"""Which store names Kafka Streams refuses: a store's name becomes a file in the task directory.

``ProcessorStateManager#registerStore`` throws ``IllegalArgumentException("Illegal store name: ...")`` for a store
named like the checkpoint file (4.2: equal to ``.checkpoint``; 4.3: any prefix of it, because 4.3 also writes
``.checkpoint_<store>`` files). The topology builder refuses such a name when the store is added, the state
manager when it registers it; both ask :func:`is_illegal_store_name`.
"""

from __future__ import annotations

from typing import Final

#: The reference Kafka Streams version; ``"4.3"`` selects KIP-1035's rules where they differ.
KS_VERSION_4_2: Final = "4.2"
KS_VERSION_4_3: Final = "4.3"
#: ``StateManagerUtil.CHECKPOINT_FILE_NAME``.
CHECKPOINT_FILE_NAME: Final = ".checkpoint"


def is_illegal_store_name(name: str, ks_version: str = KS_VERSION_4_2) -> bool:
    """4.2: the name is ``.checkpoint``; 4.3: ``".checkpoint".startsWith(name)``."""
    if ks_version == KS_VERSION_4_3:
        return CHECKPOINT_FILE_NAME.startswith(name)
    return name == CHECKPOINT_FILE_NAME
