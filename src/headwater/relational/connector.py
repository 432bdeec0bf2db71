"""The top object every relational connector shares: its source context, offset partition,
type modes and the start step's rule for connection errors.

`start` runs the connector's own `_start`; a connection error there is retriable (the runtime
reconnects with back-off) once the connector has started before - the server or network is
away for now - and final on the first start, where it is most likely a wrong host, port or
password the user must fix.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable
from typing import Any, ClassVar, TypeVar

from headwater.engine.metrics import CaptureMetrics
from headwater.engine.source import ConnectorBase, RetriableError, StartPlan
from headwater.model.schema import TableId
from headwater.model.topic_naming import TopicNaming
from headwater.relational.config import RelationalConnectorConfig

log = logging.getLogger("headwater.relational.connector")

M = TypeVar("M")


def modes_from_config(modes: type[M], config: Any) -> M:
    """A type-modes dataclass filled from the configuration attributes of the same names."""
    fields = dataclasses.fields(modes)  # type: ignore[arg-type]
    return modes(**{f.name: getattr(config, f.name) for f in fields})


class RelationalConnector(ConnectorBase):
    """Subclasses set `DATABASE` and `CONNECTION_ERRORS` and implement `_start`."""

    DATABASE: ClassVar[str] = ""
    # Exceptions of the driver that mean "could not talk to the server".
    CONNECTION_ERRORS: ClassVar[tuple[type[BaseException], ...]] = ()

    def __init__(self, config: RelationalConnectorConfig, kind: str,
                 metrics: CaptureMetrics | None = None,
                 naming: TopicNaming | None = None) -> None:
        super().__init__(kind, config.topic_prefix, {"server": config.topic_prefix}, metrics,
                         naming)

    def start(self, offset: dict[str, Any] | None) -> StartPlan:
        """Decides and prepares the sources; a later call (after a retriable error) reconnects."""
        try:
            return self._start(offset)
        except self.CONNECTION_ERRORS as exc:
            if self._started:  # it worked before: the server or network is away for now
                raise RetriableError(
                    f"{self.DATABASE} connection failed: {exc}".strip()) from exc
            raise

    def _start(self, offset: dict[str, Any] | None) -> StartPlan:
        raise NotImplementedError

    def _check_topics(self, tables: Iterable[TableId]) -> None:
        """Every captured table's topic name, checked before anything is created on the
        server: two tables that would share one topic stop the connector here, naming both
        (`TopicNamingError`); names with characters Kafka forbids are sanitized (warned)."""
        if self.naming is not None:
            topics = self.naming.check_tables(tables)
            log.info("topics step: %d captured tables, %d topics", len(topics),
                     len(set(topics.values())))
