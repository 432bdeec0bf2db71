"""`/pipelines`: the service's pipelines, with the verbs of Kafka Connect's connectors.

Why the connectors' verbs: the same clients and habits (create, read the config back and
put it again, pause, resume, stop, restart) apply to the process that materializes topics;
the handlers likewise only store the configuration or target state and ask the pipeline
manager to make the worker processes match.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Response

from headwater.server import views
from headwater.server.connectors import InvalidConnector, keep_hidden
from headwater.server.errors import ApiError, responses
from headwater.server.models import (
    ConfigScalar,
    CreatePipelineRequest,
    PipelineInfo,
    PipelineMetrics,
    PipelineStatus,
    flat_config,
)
from headwater.server.pipelines import hidden, validate_new
from headwater.server.service import Service
from headwater.server.store import ConnectorRow, StoreError, Target


def metrics_of(row: ConnectorRow) -> PipelineMetrics | None:
    """The worker's last status document as the API shows it (freshness computed now)."""
    from headwater.pipeline.status import freshness_s

    doc: dict[str, Any] = row.status or {}
    if "batches" not in doc:
        return None
    fields: dict[str, Any] = {k: doc[k] for k in PipelineMetrics.model_fields if k in doc}
    return PipelineMetrics.model_validate({**fields, "freshness_s": freshness_s(doc)})


def status_of(svc: Service, row: ConnectorRow) -> PipelineStatus:
    state = views.state_of(row, svc.pipeline_manager.running(row.name))
    return PipelineStatus(name=row.name, state=state, worker_id=svc.worker_id,
                          trace=row.trace if state == "FAILED" else None,
                          metrics=metrics_of(row))


def router(svc: Service) -> APIRouter:
    r = APIRouter(prefix="/pipelines", tags=["pipelines"])
    store, manager = svc.pipelines, svc.pipeline_manager

    def row(name: str) -> ConnectorRow:
        try:
            return store.get(name)
        except StoreError as exc:
            raise ApiError(404, str(exc)) from None

    def info(found: ConnectorRow) -> PipelineInfo:
        return PipelineInfo(name=found.name, config=hidden(found.config))

    def create(name: str, config: dict[str, str], target: Target) -> PipelineInfo:
        try:
            validate_new(svc.data_dir, name, config)
            created = store.create(name, config, target)
        except InvalidConnector as exc:
            raise ApiError(400, str(exc)) from None
        except StoreError as exc:
            raise ApiError(409, str(exc)) from None
        manager.reconcile_later(name)
        return info(created)

    @r.get("", response_model=list[str])
    def list_pipelines() -> list[str]:
        return [x.name for x in store.all()]

    @r.post("", status_code=201, response_model=PipelineInfo, responses=responses(400, 409))
    def create_pipeline(body: CreatePipelineRequest) -> PipelineInfo:
        """The configuration is what `headwater pipeline` takes (docs/pipeline.md)."""
        config = flat_config(body.config)
        name = body.name or config.get("name")
        if not name:
            raise ApiError(400, "Pipeline name is required (\"name\")")
        return create(name, config, Target(body.initial_state or "RUNNING"))

    @r.get("/{name}", response_model=PipelineInfo, responses=responses(404))
    def get_pipeline(name: str) -> PipelineInfo:
        return info(row(name))

    @r.get("/{name}/config", response_model=dict[str, str], responses=responses(404))
    def get_config(name: str) -> dict[str, str]:
        return info(row(name)).config

    @r.put("/{name}/config", response_model=PipelineInfo, responses={
        201: {"model": PipelineInfo}, **responses(400)})
    def put_config(name: str, body: Annotated[dict[str, ConfigScalar], Body()],
                   response: Response) -> PipelineInfo:
        config = flat_config(body)
        try:
            old = store.get(name)
        except StoreError:
            response.status_code = 201
            return create(name, config, Target.RUNNING)
        config = keep_hidden(config, old.config)
        try:
            validate_new(svc.data_dir, name, config)
        except InvalidConnector as exc:
            raise ApiError(400, str(exc)) from None
        updated = store.update_config(name, config)
        if updated.target is Target.RUNNING:
            manager.restart(name)  # the new configuration takes effect now
        return info(updated)

    @r.get("/{name}/status", response_model=PipelineStatus, response_model_exclude_none=True,
           responses=responses(404))
    def get_status(name: str) -> PipelineStatus:
        return status_of(svc, row(name))

    def set_target(name: str, target: Target, wait: bool) -> None:
        row(name)
        store.set_target(name, target)
        if wait:
            manager.reconcile(name)
        else:
            manager.reconcile_later(name)

    @r.put("/{name}/pause", status_code=202, responses=responses(404))
    def pause(name: str) -> Response:
        """The query stops between batches; the checkpoint keeps its place."""
        set_target(name, Target.PAUSED, wait=False)
        return Response(status_code=202)

    @r.put("/{name}/resume", status_code=202, responses=responses(404))
    def resume(name: str) -> Response:
        set_target(name, Target.RUNNING, wait=False)
        return Response(status_code=202)

    @r.put("/{name}/stop", status_code=204, responses=responses(404))
    def stop(name: str) -> Response:
        set_target(name, Target.STOPPED, wait=True)  # answered once the worker is gone
        return Response(status_code=204)

    @r.post("/{name}/restart", status_code=204, responses=responses(404))
    def restart(name: str) -> Response:
        if row(name).target is Target.RUNNING:
            manager.restart(name)
        return Response(status_code=204)

    @r.delete("/{name}", status_code=204, responses=responses(404))
    def delete(name: str) -> Response:
        """Its directory (checkpoint, Delta tables) is kept."""
        set_target(name, Target.STOPPED, wait=True)
        store.delete(name)
        return Response(status_code=204)

    return r
