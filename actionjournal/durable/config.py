"""Journal settings, validated at start so a bad setting fails with its name."""

from __future__ import annotations

import logging
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.guards import GuardObserver
from actionjournal.durable.retry import RetryPolicy
from actionjournal.durable.values import ValueCodec

log = logging.getLogger(__name__)

RECORD_HEADROOM = 4096
"""Bytes of a record besides its value (identities, digests, timestamps, signature)."""

UnknownOutcomePolicy = Literal["rerun", "reconcile", "fail"]


class JournalConfig(BaseModel):
    """``journal.*`` settings. See docs/configuration.md."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    namespace: str = Field("default", min_length=1)
    """The job's namespace inside a shared topic/table; other namespaces are ignored."""
    epoch: int = Field(0, ge=0)
    """Journal generation; records of other epochs are invisible to recovery."""
    upgrade: Literal["off", "fresh"] = "off"
    """``fresh``: restoring state taken with another journal or an older epoch skips that
    journal (logged and audited) instead of failing. See docs/upgrade.md."""
    signing_key: SecretStr | None = None
    """HMAC-SHA256 key; when set every record is signed and every record read is verified."""
    allow_pickle: bool = False
    """Journal values msgspec cannot encode with pickle. Requires ``signing_key``."""
    payload_warn_bytes: int = Field(256 * 1024, gt=0)
    """A value encoding to more bytes than this is logged as a warning (and counted)."""
    max_payload_bytes: int = Field(2 * 1024 * 1024, gt=0)
    """Encoded size limit of one value (call result, memory value, event attributes): a
    larger one fails with PayloadTooLargeError."""
    run_records_warn: int = Field(10_240, gt=0)
    """A run whose journal reaches this many records is logged as a warning (and counted)."""
    max_run_records: int = Field(51_200, gt=0)
    """Records one run may journal; the append past it fails with RunJournalTooLongError."""
    on_divergence: Literal["fail", "rerun"] = "fail"
    """A recorded call differs from the call the code makes now: fail, or drop the recorded tail."""
    on_unknown: UnknownOutcomePolicy = "rerun"
    """Default for a call that started but has no outcome and no reconciler."""
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    """Default retry policy of durable calls (a call's ``retry=`` overrides it): by default
    3 attempts, 1 s then 2 s apart, for connection errors, timeouts and HTTP 408/429/5xx."""

    @model_validator(mode="after")
    def _pickle_needs_signing(self) -> JournalConfig:
        if self.allow_pickle and self.signing_key is None:
            raise ValueError(
                "journal.allow_pickle requires journal.signing_key: unpickling unsigned records "
                "lets anyone who can write to the journal run code in the job"
            )
        return self

    def record_codec(self) -> RecordCodec:
        key = self.signing_key.get_secret_value().encode() if self.signing_key else None
        return RecordCodec(key)

    def value_codec(
        self,
        observer: GuardObserver | None = None,
        record_limit: int | None = None,
        journal: str = "the journal",
    ) -> ValueCodec:
        """The codec of call results, memory and events, with the payload guard in effect.

        A value must fit the records the store takes (``record_limit``, e.g. a Kafka topic's
        max.message.bytes): the limit is the smaller of ``max_payload_bytes`` and that, less
        room for the rest of the record. So a result too large is refused before it is
        journaled, and journaled as the call's failure (a record the store refuses would
        leave the call without outcome). ``observer`` is told of every guard hit.
        """
        limit, reason = self.max_payload_bytes, None
        if record_limit is not None and record_limit - RECORD_HEADROOM < limit:
            limit = max(record_limit - RECORD_HEADROOM, 1)
            reason = (
                f"{limit} bytes, the most {journal} takes in one record ({record_limit} "
                f"bytes) less {RECORD_HEADROOM} for the record's other fields "
                f"(journal.max_payload_bytes={self.max_payload_bytes} is higher)"
            )
            log.info("payload limit: %s", reason)
        return ValueCodec(
            allow_pickle=self.allow_pickle,
            max_payload_bytes=limit,
            payload_warn_bytes=self.payload_warn_bytes,
            observer=observer,
            limit_reason=reason,
        )
