"""The share-group state topic (``__share_group_state``, KIP-932): its records decoded."""

from collectors.share_state.decode import (
    ACKNOWLEDGED,
    ARCHIVED,
    AVAILABLE,
    ShareStateRecord,
    StateBatch,
    decode_share_state,
    given_up,
)

__all__ = [
    "ACKNOWLEDGED",
    "ARCHIVED",
    "AVAILABLE",
    "ShareStateRecord",
    "StateBatch",
    "decode_share_state",
    "given_up",
]
