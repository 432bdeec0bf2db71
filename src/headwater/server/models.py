"""The REST API's request and response bodies: Kafka Connect's JSON shapes, field for field.

Why pydantic models and not dicts: FastAPI derives /openapi.json from them, so the document
describes exactly what is sent, and schemathesis can check the service against it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ConfigScalar = str | int | float | bool
StateName = Literal["RUNNING", "PAUSED", "FAILED", "STOPPED", "UNASSIGNED", "RESTARTING"]


class Strict(BaseModel):
    """A request body: an unknown field is answered 400 naming it, never dropped silently
    (a Datastream field Headwater does not read would otherwise do nothing)."""

    model_config = ConfigDict(extra="forbid")


class ErrorMessage(BaseModel):
    error_code: int
    message: str


class ServerInfo(BaseModel):
    version: str
    commit: str
    kafka_cluster_id: str


class ConnectorTaskId(BaseModel):
    connector: str
    task: int


class ConnectorInfo(BaseModel):
    name: str
    config: dict[str, str]
    tasks: list[ConnectorTaskId]
    type: Literal["source", "sink", "unknown"] = "source"


class CreateConnectorRequest(BaseModel):
    name: str | None = None
    config: dict[str, ConfigScalar] = Field(default_factory=dict)
    initial_state: Literal["RUNNING", "PAUSED", "STOPPED"] | None = None


class ConnectorState(BaseModel):
    state: StateName
    worker_id: str
    trace: str | None = None


class TaskState(BaseModel):
    id: int
    state: StateName
    worker_id: str
    trace: str | None = None


class ConnectorStateInfo(BaseModel):
    name: str
    connector: ConnectorState
    tasks: list[TaskState]
    type: Literal["source", "sink", "unknown"] = "source"


class ExpandedConnector(BaseModel):
    status: ConnectorStateInfo | None = None
    info: ConnectorInfo | None = None


class TaskInfo(BaseModel):
    id: ConnectorTaskId
    config: dict[str, str]


class ConnectorOffset(BaseModel):
    partition: dict[str, Any]
    offset: dict[str, Any] | None


class ConnectorOffsets(BaseModel):
    offsets: list[ConnectorOffset]


class Message(BaseModel):
    message: str


class ActiveTopics(BaseModel):
    topics: list[str]


class PluginInfo(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    class_: str = Field(alias="class")
    type: Literal["source", "sink"] = "source"
    version: str


class ConfigKeyInfo(BaseModel):
    name: str
    type: str
    required: bool
    default_value: str | None
    importance: str
    documentation: str
    group: str | None
    order: int
    width: str
    display_name: str
    dependents: list[str]


class ConfigValueInfo(BaseModel):
    name: str
    value: str | None
    recommended_values: list[str]
    errors: list[str]
    visible: bool


class ConfigInfo(BaseModel):
    definition: ConfigKeyInfo
    value: ConfigValueInfo


class ConfigInfos(BaseModel):
    name: str
    error_count: int
    groups: list[str]
    configs: list[ConfigInfo]


class PipelineInfo(BaseModel):
    name: str
    config: dict[str, str]


class CreatePipelineRequest(BaseModel):
    name: str | None = None
    config: dict[str, ConfigScalar] = Field(default_factory=dict)
    initial_state: Literal["RUNNING", "PAUSED", "STOPPED"] | None = None


class PipelineMetrics(BaseModel):
    """The pipeline's status file (`pipeline/status.py`), as its worker last reported it."""

    batches: int = 0
    changes_applied: int = 0
    rows_by_table: dict[str, int] = Field(default_factory=dict)
    last_batch_id: int | None = None
    last_batch_duration_s: float | None = None
    lag: dict[str, int] = Field(default_factory=dict)
    newest_source_ts_ms: int | None = None
    freshness_s: float | None = None
    updated_ms: int | None = None


class PipelineStatus(BaseModel):
    name: str
    state: StateName
    worker_id: str
    trace: str | None = None
    metrics: PipelineMetrics | None = None


def flat_config(raw: dict[str, ConfigScalar]) -> dict[str, str]:
    """Kafka Connect configurations are string maps; JSON numbers and booleans are given as
    their text (`true`/`false`)."""
    return {str(k): (("true" if v else "false") if isinstance(v, bool) else str(v))
            for k, v in raw.items()}
