"""CreateAcls (key 30), versions 0-3.

Behaviour (``AclApis.handleCreateAcls``, ``AclControlManager.createAcls``):
- ALTER on the cluster is needed: every creation CLUSTER_AUTHORIZATION_FAILED
  otherwise. Without an authorizer: every creation SECURITY_DISABLED.
- Each creation on its own, in request order, INVALID_REQUEST with Kafka's
  messages for: a CLUSTER resource not named ``kafka-cluster``, an empty
  name, resource type ANY or UNKNOWN, pattern type other than LITERAL or
  PREFIXED, operation ANY or UNKNOWN, permission type other than ALLOW or
  DENY, a principal that is not ``type:name``. DelegationToken and User
  resources are refused the same way (this broker has no delegation tokens;
  docs/deviations.md).
- At most 10000 creations per request are carried out
  (``MAX_RECORDS_PER_USER_OP``); later ones get POLICY_VIOLATION.
- The valid ACLs are written to the ACL file in the first log dir (temp file,
  fsync, rename) and then take effect; the answer comes after that. An ACL
  that exists already is a success that changes nothing. A write that fails
  answers KAFKA_STORAGE_ERROR for them and changes nothing.

Version notes:
- v0: no pattern type (LITERAL). v1+: pattern types. v2+: flexible. v3: user
  resources (refused here).
"""

from __future__ import annotations

from broker.errors import ErrorCode, KafkaError
from broker.handlers.acl_requests import (
    CLUSTER_DENIED,
    NO_AUTHORIZER,
    batch_too_large,
    creation_binding,
    mark_unstored,
)
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.protocol.messages import CreateAclsRequest, CreateAclsResponse
from broker.security.acl import AclBinding, AclOperation, check_new_binding
from broker.security.acl_control import MAX_ACLS_PER_REQUEST, AclControl

_Result = CreateAclsResponse.AclCreationResult


class CreateAclsHandler(RequestHandler[CreateAclsRequest]):
    API_KEY = 30
    MIN_VERSION = 0
    MAX_VERSION = 3

    def handle(self, ctx: RequestContext, request: CreateAclsRequest) -> Reply:
        creations = request.creations
        if not self.authorize_cluster(ctx, AclOperation.ALTER):
            return self._all(ctx, len(creations), ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                             CLUSTER_DENIED)  # fmt: skip
        control = self.broker.acl_control
        if control is None:
            return self._all(ctx, len(creations), ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
        results: list[_Result] = []
        valid: list[tuple[_Result, AclBinding]] = []
        for creation in creations:
            binding = creation_binding(creation)
            result = _Result(error_code=ErrorCode.NONE, error_message=None)
            try:
                check_new_binding(binding)
            except KafkaError as exc:
                result.error_code, result.error_message = exc.code, str(exc)
            else:
                if len(valid) < MAX_ACLS_PER_REQUEST:
                    valid.append((result, binding))
                else:
                    result.error_code = ErrorCode.POLICY_VIOLATION
                    result.error_message = batch_too_large("created")
            results.append(result)
        response = CreateAclsResponse(results=results)
        if not valid:
            return self._counted(ctx, response)
        return self._create(ctx, control, response, valid)

    async def _create(
        self,
        ctx: RequestContext,
        control: AclControl,
        response: CreateAclsResponse,
        valid: list[tuple[_Result, AclBinding]],
    ) -> CreateAclsResponse:
        try:
            await control.create([binding for _, binding in valid])
        except OSError as exc:
            mark_unstored(control, (result for result, _ in valid), exc)
        return self._counted(ctx, response)

    @staticmethod
    def _counted(ctx: RequestContext, response: CreateAclsResponse) -> CreateAclsResponse:
        for result in response.results:
            ctx.count_error(result.error_code)
        return response

    @staticmethod
    def _all(ctx: RequestContext, n: int, code: ErrorCode, message: str) -> CreateAclsResponse:
        ctx.count_error(code, n)
        return CreateAclsResponse(
            results=[_Result(error_code=code, error_message=message) for _ in range(n)]
        )
