"""The one rule both replicated stores (Kafka, Fluss) apply to their in-sync replica setting."""

from __future__ import annotations


def insync_replicas(replication_factor: int, min_insync_replicas: int | None) -> int:
    """``min_insync_replicas``, or its default: 2 copies, or 1 when there is only one.

    More than ``replication_factor`` is refused: no append could ever be acknowledged.
    """
    if min_insync_replicas is None:
        return min(2, replication_factor)
    if min_insync_replicas > replication_factor:
        raise ValueError(
            f"min_insync_replicas={min_insync_replicas} cannot exceed "
            f"replication_factor={replication_factor}: no append could ever be acknowledged"
        )
    return min_insync_replicas
