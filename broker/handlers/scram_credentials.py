"""DescribeUserScramCredentials (key 50) and AlterUserScramCredentials (key 51), v0 (KIP-554).

Behaviour (``KafkaApis``, ``ScramControlManager``, ``ScramImage``):
- Describe needs DESCRIBE on the cluster, else a top-level
  CLUSTER_AUTHORIZATION_FAILED and, as ``getErrorResponse`` builds it, one
  result per user named with that error and no user name. Null or empty
  users: every user. A user
  named twice: DUPLICATE_RESOURCE "Cannot describe SCRAM credentials for the
  same user twice in a single request: <user>"; unknown: RESOURCE_NOT_FOUND
  "Attempt to describe a user credential that does not exist: <user>".
  Answers mechanism (1 SCRAM-SHA-256, 2 SCRAM-SHA-512) and iterations only.
- Alter needs ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED for
  every user named. Per user: named twice in one request (deletion or
  upsertion): DUPLICATE_RESOURCE "A user credential cannot be altered twice
  in the same request"; empty name: UNACCEPTABLE_CREDENTIAL "Username must
  not be empty"; unknown mechanism: UNSUPPORTED_SASL_MECHANISM "Unknown SCRAM
  mechanism"; iterations below 4096: UNACCEPTABLE_CREDENTIAL "Too few
  iterations", above 16384 "Too many iterations"; deleting what does not
  exist: RESOURCE_NOT_FOUND "Attempt to delete a user credential that does
  not exist". The client sends the salt and the salted password (never the
  password); the broker keeps StoredKey and ServerKey derived from it.
  The accepted changes are written durably before the answer; nothing is
  stored for a refused user.
"""

from __future__ import annotations

import collections

from broker.errors import ErrorCode
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.protocol.messages import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)
from broker.security.acl import AclOperation
from broker.security.scram_store import (
    MAX_ITERATIONS,
    MECHANISM_BY_TYPE,
    MECHANISMS,
    credential_from_salted_password,
)

_NOT_FOUND = "Attempt to describe a user credential that does not exist: "
_DUPLICATE = "Cannot describe SCRAM credentials for the same user twice in a single request: "


class DescribeUserScramCredentialsHandler(RequestHandler[DescribeUserScramCredentialsRequest]):
    API_KEY = 50
    MIN_VERSION = 0
    MAX_VERSION = 0

    def handle(self, ctx: RequestContext, request: DescribeUserScramCredentialsRequest) -> Reply:
        result_cls = DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult
        info_cls = DescribeUserScramCredentialsResponse.CredentialInfo
        if not self.authorize_cluster(ctx, AclOperation.DESCRIBE):
            denied, why = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
            ctx.count_error(denied)
            # DescribeUserScramCredentialsRequest.getErrorResponse: a result per user
            # named, the user left unset
            return DescribeUserScramCredentialsResponse(
                error_code=denied,
                error_message=why,
                results=[
                    result_cls(user="", error_code=denied, error_message=why)
                    for _ in request.users or ()
                ],
            )
        control = self.broker.scram_control
        users = control.store.users() if control is not None else {}
        wanted = [u.name for u in request.users] if request.users else sorted(users)
        times = collections.Counter(wanted)
        results = []
        for name in times:
            infos: list[DescribeUserScramCredentialsResponse.CredentialInfo] = []
            if times[name] > 1:
                code, message = ErrorCode.DUPLICATE_RESOURCE, _DUPLICATE + name
            elif name not in users:
                code, message = ErrorCode.RESOURCE_NOT_FOUND, _NOT_FOUND + name
            else:
                code, message = ErrorCode.NONE, None
                infos = [
                    info_cls(mechanism=MECHANISMS[m][0], iterations=i)
                    for m, i in users[name].items()
                ]
            ctx.count_error(code)
            results.append(
                result_cls(
                    user=name, error_code=code, error_message=message, credential_infos=infos
                )
            )
        return DescribeUserScramCredentialsResponse(
            error_code=ErrorCode.NONE, error_message=None, results=results
        )


class AlterUserScramCredentialsHandler(RequestHandler[AlterUserScramCredentialsRequest]):
    API_KEY = 51
    MIN_VERSION = 0
    MAX_VERSION = 0

    def handle(self, ctx: RequestContext, request: AlterUserScramCredentialsRequest) -> Reply:
        result_cls = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult
        names = list(
            dict.fromkeys(
                [d.name for d in request.deletions] + [u.name for u in request.upsertions]
            )
        )
        control = self.broker.scram_control
        if not self.authorize_cluster(ctx, AclOperation.ALTER) or control is None:
            code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            ctx.count_error(code, len(names))
            return AlterUserScramCredentialsResponse(
                results=[
                    result_cls(
                        user=n, error_code=code, error_message="Cluster authorization failed."
                    )
                    for n in names
                ]
            )
        errors: dict[str, tuple[ErrorCode, str | None]] = {}
        deletions: dict[str, str] = {}
        upserts: dict[str, tuple[str, object]] = {}
        store = control.store
        for d in request.deletions:
            if d.name in errors:
                continue
            if deletions.pop(d.name, None) is not None:
                errors[d.name] = (ErrorCode.DUPLICATE_RESOURCE, _TWICE)
                continue
            mechanism = MECHANISM_BY_TYPE.get(d.mechanism)
            problem = _check_name(d.name, mechanism)
            if problem is None and store.get(d.name, mechanism or "") is None:
                problem = (
                    ErrorCode.RESOURCE_NOT_FOUND,
                    "Attempt to delete a user credential that does not exist",
                )
            if problem is not None:
                errors[d.name] = problem
            else:
                deletions[d.name] = mechanism or ""
        for u in request.upsertions:
            if u.name in errors:
                continue
            if deletions.pop(u.name, None) is not None or upserts.pop(u.name, None) is not None:
                errors[u.name] = (ErrorCode.DUPLICATE_RESOURCE, _TWICE)
                continue
            mechanism = MECHANISM_BY_TYPE.get(u.mechanism)
            problem = _check_name(u.name, mechanism)
            if problem is None and u.iterations < MECHANISMS[mechanism or ""][2]:
                problem = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
            elif problem is None and u.iterations > MAX_ITERATIONS:
                problem = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
            if problem is not None:
                errors[u.name] = problem
                continue
            assert mechanism is not None
            upserts[u.name] = (
                mechanism,
                credential_from_salted_password(
                    mechanism, bytes(u.salt), bytes(u.salted_password), u.iterations
                ),
            )

        def answer(write_error: str | None) -> AlterUserScramCredentialsResponse:
            results = []
            for name in names:
                code, message = errors.get(name, (ErrorCode.NONE, None))
                if write_error is not None and name not in errors:
                    code, message = ErrorCode.UNKNOWN_SERVER_ERROR, write_error
                ctx.count_error(code)
                results.append(result_cls(user=name, error_code=code, error_message=message))
            return AlterUserScramCredentialsResponse(results=results)

        if not deletions and not upserts:
            return answer(None)

        async def apply() -> AlterUserScramCredentialsResponse:
            try:
                await control.alter(
                    deletions.items(),
                    [(n, m, c) for n, (m, c) in upserts.items()],  # type: ignore[misc]
                )
            except OSError as exc:
                return answer(f"the credentials could not be written: {exc.strerror}")
            return answer(None)

        return apply()


_TWICE = "A user credential cannot be altered twice in the same request"


def _check_name(name: str, mechanism: str | None) -> tuple[ErrorCode, str] | None:
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism is None:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None
