# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Which pods a task targets (options.Target: one name, several names, or selectors), and whether its
namespace exists."""

from ansible_collections.inplace.k8s.plugins.module_utils.connection import paths
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ApiError, NotFoundError, ValidationError


def require_namespace(kube, namespace, **details):
    """Raise ValidationError (with ``details`` for the result) when ``namespace`` does not exist: a list
    of pods there is just empty, and a missing workload is not the same mistake. Credentials that may not
    read namespaces cannot tell: nothing is raised then."""
    try:
        kube.request('GET', paths.api_path('v1', 'namespaces', name=namespace))
    except NotFoundError:
        raise ValidationError('namespace %s does not exist; check the namespace (rollout_target.namespace in the '
                              'role); kubectl get namespaces lists them. Nothing was changed' % namespace, **details)
    except ApiError:
        return


def select_pods(kube, target, watcher=None):
    """(pods sorted by name, list resourceVersion, names asked for but not found) of an options.Target.
    ``watcher``: a started waiter.Watcher whose pods include the target's (the rollout window's watch of
    its workload); its cache answers instead of a list (version None: the watch goes on from its own)."""
    names = target.pod_names()
    if watcher is not None and names:
        pods, version = [pod for pod in (watcher.get(name) for name in names) if pod is not None], None
    else:
        labels, fields = target.selectors()
        pods, version = kube.list_pods(target.namespace, labels, fields)
        if names:
            pods = [p for p in pods if p['metadata']['name'] in names]
    found = set(p['metadata']['name'] for p in pods)
    missing = [n for n in names if n not in found]
    return sorted(pods, key=lambda p: p['metadata']['name']), version, missing
