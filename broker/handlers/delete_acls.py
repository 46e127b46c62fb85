"""DeleteAcls (key 31), versions 0-3.

Behaviour (``AclApis.handleDeleteAcls``, ``AclControlManager.deleteAcls``):
- ALTER on the cluster is needed: every filter CLUSTER_AUTHORIZATION_FAILED
  otherwise. Without an authorizer: every filter SECURITY_DISABLED.
- Each filter selects ACLs as DescribeAcls's does; a filter with an UNKNOWN
  resource or pattern type -> INVALID_REQUEST "Unknown patternFilter.", with
  an UNKNOWN operation or permission type -> "Unknown entryFilter.".
- Every ACL a filter matches is deleted and listed in its result (an ACL
  matched by two filters is listed by both). At most 10000 ACLs are deleted
  per request (``MAX_RECORDS_PER_USER_OP``): a filter that would pass that
  gets POLICY_VIOLATION and deletes nothing.
- The ACL file is rewritten (temp file, fsync, rename) before the deletions
  take effect and the answer is sent; a write that fails answers
  KAFKA_STORAGE_ERROR for the filters and deletes nothing.

Version notes:
- v0: no pattern type (LITERAL). v1+: pattern types. v2+: flexible. v3: user
  resources (none here).
"""

from __future__ import annotations

from broker.errors import ErrorCode
from broker.handlers.acl_requests import (
    CLUSTER_DENIED,
    NO_AUTHORIZER,
    batch_too_large,
    binding_filter,
    filter_problem,
    mark_unstored,
)
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.protocol.messages import DeleteAclsRequest, DeleteAclsResponse
from broker.security.acl import AclBinding, AclBindingFilter, AclOperation
from broker.security.acl_control import MAX_ACLS_PER_REQUEST, AclControl

_Result = DeleteAclsResponse.DeleteAclsFilterResult


class DeleteAclsHandler(RequestHandler[DeleteAclsRequest]):
    API_KEY = 31
    MIN_VERSION = 0
    MAX_VERSION = 3

    def handle(self, ctx: RequestContext, request: DeleteAclsRequest) -> Reply:
        filters = request.filters
        if not self.authorize_cluster(ctx, AclOperation.ALTER):
            return self._all(ctx, len(filters), ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                             CLUSTER_DENIED)  # fmt: skip
        control = self.broker.acl_control
        if control is None:
            return self._all(ctx, len(filters), ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
        results: list[_Result] = []
        valid: list[tuple[_Result, AclBindingFilter]] = []
        doomed: set[AclBinding] = set()
        for data in filters:
            wanted = binding_filter(data)
            result = _Result(error_code=ErrorCode.NONE, error_message=None, matching_acls=[])
            problem = filter_problem(wanted)
            if problem is not None:
                result.error_code, result.error_message = ErrorCode.INVALID_REQUEST, problem
            else:
                matched = doomed.union(control.authorizer.acls(wanted))
                if len(matched) > MAX_ACLS_PER_REQUEST:
                    result.error_code = ErrorCode.POLICY_VIOLATION
                    result.error_message = batch_too_large("deleted")
                else:
                    doomed = matched
                    valid.append((result, wanted))
            results.append(result)
        response = DeleteAclsResponse(filter_results=results)
        if not valid:
            return self._counted(ctx, response)
        return self._delete(ctx, control, response, valid)

    async def _delete(
        self,
        ctx: RequestContext,
        control: AclControl,
        response: DeleteAclsResponse,
        valid: list[tuple[_Result, AclBindingFilter]],
    ) -> DeleteAclsResponse:
        try:
            deleted = await control.delete([f for _, f in valid])
        except OSError as exc:
            mark_unstored(control, (result for result, _ in valid), exc)
            return self._counted(ctx, response)
        for (result, _), bindings in zip(valid, deleted, strict=True):
            result.matching_acls = [
                DeleteAclsResponse.DeleteAclsMatchingAcl(
                    error_code=ErrorCode.NONE,
                    error_message=None,
                    resource_type=int(b.pattern.resource_type),
                    resource_name=b.pattern.name,
                    pattern_type=int(b.pattern.pattern_type),
                    principal=b.entry.principal,
                    host=b.entry.host,
                    operation=int(b.entry.operation),
                    permission_type=int(b.entry.permission_type),
                )
                for b in bindings
            ]
        return self._counted(ctx, response)

    @staticmethod
    def _counted(ctx: RequestContext, response: DeleteAclsResponse) -> DeleteAclsResponse:
        for result in response.filter_results:
            ctx.count_error(result.error_code)
        return response

    @staticmethod
    def _all(ctx: RequestContext, n: int, code: ErrorCode, message: str) -> DeleteAclsResponse:
        ctx.count_error(code, n)
        return DeleteAclsResponse(
            filter_results=[
                _Result(error_code=code, error_message=message, matching_acls=[]) for _ in range(n)
            ]
        )
