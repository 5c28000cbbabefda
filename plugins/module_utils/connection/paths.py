# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure: the one place where an API path is built from data (docs/safety.md, "Trust model").

Names often come from objects others write (a pod's ownerReferences, a workload's labels, a task's variables).
Each segment is checked against what the API server itself accepts - an API version ``[group/]vN[alphaN|betaN]``,
a resource name, a namespace (DNS label), an object name (DNS subdomain) - and then percent-quoted, so that no
value can add a path segment (``../../secrets/x``), a query (``?watch=true``) or a fragment. A value the API
would refuse anyway is refused here by name, before any request.

``OWNER_KINDS`` allow-lists the controllers an ownerReference may name for us to read: a kind with one of its
known API versions resolves to a fixed path; anything else is an unknown owner, and no request is made.
"""

import re
from urllib.parse import quote

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError

_LABEL = r'[a-z0-9]([-a-z0-9]*[a-z0-9])?'
DNS_LABEL = re.compile(r'%s\Z' % _LABEL)
DNS_SUBDOMAIN = re.compile(r'%s(\.%s)*\Z' % (_LABEL, _LABEL))
API_VERSION = re.compile(r'(%s(\.%s)*/)?v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?\Z' % (_LABEL, _LABEL))
RESOURCE = re.compile(r'%s\Z' % _LABEL)
SHOWN = 80   # characters of a refused value shown in a message

# Controllers whose objects an ownerReference may lead us to read: kind -> (resource, API versions served).
OWNER_KINDS = {
    'ReplicaSet': ('replicasets', ('apps/v1',)),
    'Deployment': ('deployments', ('apps/v1',)),
    'StatefulSet': ('statefulsets', ('apps/v1',)),
    'DaemonSet': ('daemonsets', ('apps/v1',)),
    'Job': ('jobs', ('batch/v1',)),
    'CronJob': ('cronjobs', ('batch/v1',)),
    'ReplicationController': ('replicationcontrollers', ('v1',)),
}


def shown(value):
    """``value`` as a message shows it: repr, cut to SHOWN characters."""
    text = repr(value)
    return text if len(text) <= SHOWN else text[:SHOWN] + '...'


def is_name(value):
    """Is ``value`` an object name the API accepts in a path (DNS subdomain, at most 253 characters)?"""
    return isinstance(value, str) and len(value) <= 253 and bool(DNS_SUBDOMAIN.match(value))


def is_namespace(value):
    """Is ``value`` a namespace name (DNS label, at most 63 characters)?"""
    return isinstance(value, str) and len(value) <= 63 and bool(DNS_LABEL.match(value))


def _check(value, valid, what):
    if not valid(value):
        raise ValidationError('%s %s is not one the Kubernetes API accepts (lower-case letters, digits, "-"%s); '
                              'nothing was requested' % (what, shown(value), ' and "."' if valid is is_name else ''))
    return quote(value, safe='')


def api_path(api_version, resource, namespace=None, name=None, subresource=None):
    """``/api/v1/...`` or ``/apis/<group>/<version>/...``: the collection of ``resource`` (in ``namespace``, or
    cluster-wide without it), or the object ``name``, or its ``subresource``. ValidationError for a segment the
    API would not accept."""
    if not (isinstance(api_version, str) and API_VERSION.match(api_version)):
        raise ValidationError('API version %s is not one the Kubernetes API serves; nothing was requested'
                              % shown(api_version))
    parts = ['api' if '/' not in api_version else 'apis'] + api_version.split('/')
    if namespace is not None:
        parts += ['namespaces', _check(namespace, is_namespace, 'namespace')]
    parts.append(_check(resource, lambda v: isinstance(v, str) and bool(RESOURCE.match(v)), 'resource'))
    if name is not None:
        parts.append(_check(name, is_name, 'name'))
        if subresource is not None:
            parts.append(_check(subresource, lambda v: isinstance(v, str) and bool(RESOURCE.match(v)),
                                'subresource'))
    return '/' + '/'.join(parts)


def owner_path(ref, namespace):
    """(path, None) of the object an ownerReference ``ref`` names in ``namespace``, or (None, why) when its kind
    or API version is not an allow-listed controller (OWNER_KINDS) or its name is not a valid one: an unknown
    owner, never read."""
    kind, api_version, name = ref.get('kind'), ref.get('apiVersion'), ref.get('name')
    known = OWNER_KINDS.get(kind) if isinstance(kind, str) else None
    if known is None or api_version not in known[1]:
        return None, 'unknown owner %s %s (not one of the controllers %s)' % (
            shown(api_version), shown(kind), ', '.join(sorted(OWNER_KINDS)))
    if not is_name(name):
        return None, 'unknown owner %s with the name %s, which is not a valid object name' % (kind, shown(name))
    return api_path(api_version, known[0], namespace, name), None
