# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Permissions a run needs, checked before anything is written.

A run that is allowed to patch pods but not pods/resize (or pods/status) would otherwise write its
state record, drain a pod or change one container and then stop half-way. The API server answers
"may I?" through SelfSubjectAccessReview (allowed to every authenticated user by the default
``system:basic-user`` role, and evaluated for the impersonated user when impersonating); a server
that cannot answer is not an error here: the writes themselves are then the check.
"""

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import RBAC_HINT, ApiError, RbacForbidden

REVIEW_PATH = '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews'


def needed(operation, check_mode, watch, drainer=None):
    """[(verb, 'resource[/subresource]', group)] that the writes and waits of this run use (``drainer``:
    its drain mode, drain.Drainer, or None)."""
    wanted = []
    if watch:
        wanted.append(('watch', 'pods', ''))
    if not check_mode:
        wanted.extend(operation.permissions)
        if drainer:
            wanted.extend(drainer.permissions)
    seen = set()
    return [p for p in wanted if not (p in seen or seen.add(p))]


def allowed(kube, namespace, verb, resource, group=''):
    """True / False as the API server answers for the current user, None when it cannot tell."""
    name, _sep, sub = resource.partition('/')
    body = {'apiVersion': 'authorization.k8s.io/v1', 'kind': 'SelfSubjectAccessReview', 'spec': {
        'resourceAttributes': {'namespace': namespace or '', 'verb': verb, 'group': group, 'resource': name,
                               'subresource': sub}}}
    try:
        answer = kube.request('POST', REVIEW_PATH, body=body)
    except ApiError:
        return None
    return bool((answer.get('status') or {}).get('allowed'))


def require(kube, namespace, permissions):
    """Raise RbacForbidden naming every missing permission (nothing has been written yet). ``namespace``
    None: cluster-scoped resources."""
    missing = ['%s %s%s' % (verb, resource, ' (%s)' % group if group else '')
               for verb, resource, group in permissions if allowed(kube, namespace, verb, resource, group) is False]
    if missing:
        raise RbacForbidden('forbidden: the credentials used may not %s %s; nothing was changed. '
                            'Grant it: %s' % (', '.join(missing), 'in namespace %s' % namespace if namespace
                                              else '(cluster-scoped)', RBAC_HINT), status=403, reason='RBAC')
