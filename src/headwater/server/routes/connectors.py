"""`/connectors`: Kafka Connect's connector resources, request for request.

Why the handlers only store and ask: each changes the stored configuration or target state,
then asks the manager to make the worker processes match (`reconcile`), so a request and a
restart of the service lead to the same processes.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Body, Query, Response

from headwater.engine.offsets import OffsetStoreError
from headwater.server import views
from headwater.server.connectors import InvalidConnector, keep_hidden, validate_new
from headwater.server.errors import ApiError, responses
from headwater.server.models import (
    ActiveTopics,
    ConfigScalar,
    ConnectorInfo,
    ConnectorOffsets,
    ConnectorStateInfo,
    CreateConnectorRequest,
    ExpandedConnector,
    Message,
    TaskInfo,
    TaskState,
    flat_config,
)
from headwater.server.service import Service
from headwater.server.store import ConnectorRow, StoreError, Target
from headwater.state_format import StateFormatError

STOPPED_FIRST = ("Connectors must be in the STOPPED state before their offsets can be "
                 "modified. This can be done for the specified connector by issuing a 'PUT' "
                 "request to the '/connectors/{name}/stop' endpoint")


def router(svc: Service) -> APIRouter:
    r = APIRouter(prefix="/connectors", tags=["connectors"])

    def row(name: str) -> ConnectorRow:
        try:
            return svc.store.get(name)
        except StoreError as exc:
            raise ApiError(404, str(exc)) from None

    def status_of(found: ConnectorRow) -> ConnectorStateInfo:
        return views.status(found, svc.manager.running(found.name), svc.worker_id)

    def create(name: str, config: dict[str, str], target: Target) -> ConnectorInfo:
        config = {**config, "name": name}
        try:
            validate_new(svc.data_dir, name, config)
            created = svc.store.create(name, config, target)
        except InvalidConnector as exc:
            raise ApiError(400, str(exc)) from None
        except StoreError as exc:
            raise ApiError(409, str(exc)) from None
        svc.manager.reconcile_later(name)
        return views.info(created)

    @r.get("", response_model=list[str] | dict[str, ExpandedConnector],
           response_model_exclude_none=True)
    def list_connectors(
        expand: Annotated[list[Literal["status", "info"]] | None, Query()] = None,
    ) -> list[str] | dict[str, ExpandedConnector]:
        rows = svc.store.all()
        if not expand:
            return [x.name for x in rows]
        return {x.name: ExpandedConnector(
            status=status_of(x) if "status" in expand else None,
            info=views.info(x) if "info" in expand else None) for x in rows}

    @r.post("", status_code=201, response_model=ConnectorInfo,
            responses=responses(400, 409))
    def create_connector(body: CreateConnectorRequest) -> ConnectorInfo:
        config = flat_config(body.config)
        name = body.name or config.get("name")
        if not name:
            raise ApiError(400, "Connector name is required (\"name\")")
        return create(name, config, Target(body.initial_state or "RUNNING"))

    @r.get("/{name}", response_model=ConnectorInfo, responses=responses(404))
    def get_connector(name: str) -> ConnectorInfo:
        return views.info(row(name))

    @r.get("/{name}/config", response_model=dict[str, str], responses=responses(404))
    def get_config(name: str) -> dict[str, str]:
        return views.info(row(name)).config

    @r.put("/{name}/config", response_model=ConnectorInfo, responses={
        201: {"model": ConnectorInfo}, **responses(400)})
    def put_config(name: str, body: Annotated[dict[str, ConfigScalar], Body()],
                   response: Response) -> ConnectorInfo:
        config = flat_config(body)
        try:
            old = svc.store.get(name)
        except StoreError:
            response.status_code = 201
            return create(name, config, Target.RUNNING)
        config = {**keep_hidden(config, old.config), "name": name}
        try:
            validate_new(svc.data_dir, name, config)
        except InvalidConnector as exc:
            raise ApiError(400, str(exc)) from None
        updated = svc.store.update_config(name, config)
        if updated.target is Target.RUNNING:
            svc.manager.restart(name)  # the new configuration takes effect now
        return views.info(updated)

    @r.get("/{name}/status", response_model=ConnectorStateInfo,
           response_model_exclude_none=True, responses=responses(404))
    def get_status(name: str) -> ConnectorStateInfo:
        return status_of(row(name))

    @r.get("/{name}/tasks", response_model=list[TaskInfo], responses=responses(404))
    def get_tasks(name: str) -> list[TaskInfo]:
        return views.task_infos(row(name), svc.data_dir)

    @r.get("/{name}/tasks/{task}/status", response_model=TaskState,
           response_model_exclude_none=True, responses=responses(404))
    def get_task_status(name: str, task: int) -> TaskState:
        tasks = status_of(row(name)).tasks
        if task < 0 or task >= len(tasks):
            raise ApiError(404, f"Task {name}-{task} not found")
        return tasks[task]

    @r.post("/{name}/tasks/{task}/restart", status_code=204, responses=responses(404))
    def restart_task(name: str, task: int) -> Response:
        get_task_status(name, task)
        svc.manager.restart(name)
        return Response(status_code=204)

    @r.put("/{name}/pause", status_code=202, responses=responses(404))
    def pause(name: str) -> Response:
        row(name)
        svc.store.set_target(name, Target.PAUSED)
        svc.manager.reconcile_later(name)  # drains in the background
        return Response(status_code=202)

    @r.put("/{name}/resume", status_code=202, responses=responses(404))
    def resume(name: str) -> Response:
        row(name)
        svc.store.set_target(name, Target.RUNNING)
        svc.manager.reconcile_later(name)
        return Response(status_code=202)

    @r.put("/{name}/stop", status_code=204, responses=responses(404))
    def stop(name: str) -> Response:
        row(name)
        svc.store.set_target(name, Target.STOPPED)
        svc.manager.reconcile(name)  # answered once the worker is gone
        return Response(status_code=204)

    @r.post("/{name}/restart", status_code=202, response_model=ConnectorStateInfo,
            response_model_exclude_none=True, responses={204: {"description": "restarted"},
                                                          **responses(404)})
    def restart(name: str, include_tasks: Annotated[bool, Query(alias="includeTasks")] = False,
                only_failed: Annotated[bool, Query(alias="onlyFailed")] = False,
                ) -> ConnectorStateInfo | Response:
        found = row(name)
        before = status_of(found)
        chosen = not only_failed or before.connector.state == "FAILED"
        if chosen and found.target is Target.RUNNING:
            svc.manager.restart(name)
        if not include_tasks and not only_failed:
            return Response(status_code=204)
        return views.status(found, svc.manager.running(name), svc.worker_id,
                            restarting=chosen and found.target is Target.RUNNING)

    @r.delete("/{name}", status_code=204, responses=responses(404))
    def delete(name: str) -> Response:
        row(name)
        svc.store.set_target(name, Target.STOPPED)
        svc.manager.reconcile(name)
        svc.store.delete(name)
        return Response(status_code=204)

    def unreadable(exc: Exception) -> ApiError:
        """An offset file this release must not read (a newer Headwater's format, or damaged):
        the state on disk conflicts with the request, not the request itself, so 409, with the
        line the CLI prints (`offsets show`)."""
        return ApiError(409, str(exc))

    @r.get("/{name}/offsets", response_model=ConnectorOffsets, responses=responses(404, 409))
    def get_offsets(name: str) -> ConnectorOffsets:
        found = row(name)
        try:
            return views.read_offsets(found, svc.data_dir)
        except (OffsetStoreError, StateFormatError) as exc:
            raise unreadable(exc) from None

    def stopped(name: str) -> ConnectorRow:
        found = row(name)
        if found.target is not Target.STOPPED or svc.manager.running(name):
            raise ApiError(400, STOPPED_FIRST.replace("{name}", name))
        return found

    @r.patch("/{name}/offsets", response_model=Message, responses=responses(400, 404, 409))
    def alter_offsets(name: str, body: ConnectorOffsets) -> Message:
        found = stopped(name)
        try:
            problem = views.write_offsets(found, svc.data_dir, body)
        except (OffsetStoreError, StateFormatError) as exc:
            raise unreadable(exc) from None
        if problem is not None:
            raise ApiError(400, problem)
        return Message(message="The offsets for this connector have been altered "
                               "successfully")

    @r.delete("/{name}/offsets", response_model=Message, responses=responses(400, 404))
    def reset_offsets(name: str) -> Message:
        views.offsets_path(stopped(name), svc.data_dir).unlink(missing_ok=True)
        return Message(message="The offsets for this connector have been reset successfully")

    @r.get("/{name}/topics", response_model=dict[str, ActiveTopics], responses=responses(404))
    def get_topics(name: str) -> dict[str, ActiveTopics]:
        return {name: ActiveTopics(topics=views.topics(row(name), svc.data_dir))}

    return r
