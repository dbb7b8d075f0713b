"""The share-group state topic (``__share_group_state``, KIP-932): its records decoded
(``decode``), folded into each share-partition's state and the records it archived
(``state``), and read each cycle by a group-less consumer (``reader``)."""

from collectors.share_state.decode import (
    ACKNOWLEDGED,
    ARCHIVED,
    AVAILABLE,
    ShareStateRecord,
    StateBatch,
    decode_share_state,
    given_up,
)
from collectors.share_state.reader import SHARE_STATE_TOPIC, ShareStateReader
from collectors.share_state.state import ShareStateFigures, ShareStateTopic

__all__ = [
    "ACKNOWLEDGED",
    "ARCHIVED",
    "AVAILABLE",
    "SHARE_STATE_TOPIC",
    "ShareStateFigures",
    "ShareStateReader",
    "ShareStateRecord",
    "ShareStateTopic",
    "StateBatch",
    "decode_share_state",
    "given_up",
]
