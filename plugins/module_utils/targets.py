# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Which pods a task targets (args.TARGET_ARG_SPEC): one name, several names, or selectors."""

from urllib.parse import quote

from ansible_collections.inplace.k8s.plugins.module_utils.errors import ApiError, NotFoundError, ValidationError


def require_namespace(kube, namespace, **details):
    """Raise ValidationError (with ``details`` for the result) when ``namespace`` does not exist: a list
    of pods there is just empty, and a missing workload is not the same mistake. Credentials that may not
    read namespaces cannot tell: nothing is raised then."""
    try:
        kube.request('GET', '/api/v1/namespaces/%s' % quote(namespace, safe=''))
    except NotFoundError:
        raise ValidationError('namespace %s does not exist; check the namespace (rollout_target.namespace in the '
                              'role); kubectl get namespaces lists them. Nothing was changed' % namespace, **details)
    except ApiError:
        return


def selectors(params):
    """(label_selector, field_selector) strings for the API: the same for the list and the watch."""
    labels = ','.join(params.get('label_selectors') or []) or None
    fields = list(params.get('field_selectors') or [])
    names = names_of(params)
    if len(names) == 1:
        fields.append('metadata.name=%s' % names[0])
    return labels, ','.join(fields) or None


def names_of(params):
    if params.get('name'):
        return [params['name']]
    return list(params.get('names') or [])


def select_pods(kube, params):
    """(pods sorted by name, list resourceVersion, names asked for but not found)."""
    labels, fields = selectors(params)
    pods, version = kube.list_pods(params['namespace'], labels, fields)
    names = names_of(params)
    if names:
        pods = [p for p in pods if p['metadata']['name'] in names]
    found = set(p['metadata']['name'] for p in pods)
    missing = [n for n in names if n not in found]
    return sorted(pods, key=lambda p: p['metadata']['name']), version, missing
