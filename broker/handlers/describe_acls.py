"""DescribeAcls (key 29), versions 0-3.

Behaviour (``AclApis.handleDescribeAcls``, ``StandardAuthorizer.acls``):
- DESCRIBE on the cluster is needed: CLUSTER_AUTHORIZATION_FAILED otherwise.
- Without an authorizer: SECURITY_DISABLED "No Authorizer is configured on
  the broker.".
- The filter selects ACLs (``broker/security/acl.py``): a null name,
  principal or host matches any; resource type, operation and permission
  type ANY match any; pattern type ANY matches any pattern with exactly the
  given name, MATCH every pattern that applies to the named resource
  (literal, ``*``, prefixes of it). A filter with an UNKNOWN code ->
  INVALID_REQUEST (Kafka closes the connection; docs/deviations.md).
- The answer lists each matching resource pattern once with its entries.

Version notes:
- v0: no pattern type (LITERAL; Kafka turns an ANY filter into LITERAL for
  v0, which a v0 request cannot carry anyway). v1+: pattern types; throttle
  on quota violations (never here). v2+: flexible. v3: user resources (this
  broker keeps none).
"""

from __future__ import annotations

from broker.errors import ErrorCode
from broker.handlers.acl_requests import (
    CLUSTER_DENIED,
    NO_AUTHORIZER,
    binding_filter,
    filter_problem,
    group_by_pattern,
)
from broker.handlers.base import Reply, RequestHandler
from broker.handlers.context import RequestContext
from broker.protocol.messages import DescribeAclsRequest, DescribeAclsResponse
from broker.security.acl import AclOperation


class DescribeAclsHandler(RequestHandler[DescribeAclsRequest]):
    API_KEY = 29
    MIN_VERSION = 0
    MAX_VERSION = 3

    def handle(self, ctx: RequestContext, request: DescribeAclsRequest) -> Reply:
        if not self.authorize_cluster(ctx, AclOperation.DESCRIBE):
            return self._error(ctx, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED)
        authorizer = self.broker.authorizer
        if authorizer is None:
            return self._error(ctx, ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
        wanted = binding_filter(request)
        problem = filter_problem(wanted)
        if problem is not None:
            return self._error(ctx, ErrorCode.INVALID_REQUEST, problem)
        ctx.count_error(ErrorCode.NONE)
        return DescribeAclsResponse(
            error_code=ErrorCode.NONE,
            error_message=None,
            resources=[
                DescribeAclsResponse.DescribeAclsResource(
                    resource_type=int(pattern.resource_type),
                    resource_name=pattern.name,
                    pattern_type=int(pattern.pattern_type),
                    acls=[
                        DescribeAclsResponse.AclDescription(
                            principal=e.principal,
                            host=e.host,
                            operation=int(e.operation),
                            permission_type=int(e.permission_type),
                        )
                        for e in entries
                    ],
                )
                for pattern, entries in group_by_pattern(authorizer.acls(wanted))
            ],
        )

    @staticmethod
    def _error(ctx: RequestContext, code: ErrorCode, message: str) -> DescribeAclsResponse:
        ctx.count_error(code)
        return DescribeAclsResponse(error_code=code, error_message=message, resources=[])
