"""Security below the handlers: ACLs, the authorizer and their persistence.

* ``acl.py`` -- Kafka's ACL model (resource types, pattern types, operations,
  permission types with their wire codes; bindings and binding filters).
* ``authorizer.py`` -- ``StandardAuthorizer`` semantics with a decision cache.
* ``acl_index.py`` -- the ACLs indexed by resource for the authorizer.
* ``acl_store.py`` -- the ACLs persisted atomically in the first log dir.
* ``acl_control.py`` -- creating and deleting ACLs (store, then authorizer).
* ``audit.py`` -- the rate-limited log of denied requests.
"""
