# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Typed exceptions raised by module_utils and caught once in a module's main()."""

import re


class InplaceError(Exception):
    """Base class. ``details`` are extra keys for ``fail_json`` (for example a partial result)."""

    def __init__(self, msg, **details):
        super().__init__(msg)
        self.msg = msg
        self.details = details


class ConfigError(InplaceError):
    """The connection to the cluster could not be configured (auth options, kubeconfig)."""


class ValidationError(InplaceError):
    """The module's input is wrong (bad image reference, unknown container ...); nothing was written."""


class NoMatchError(InplaceError):
    """No pod matched the target and ``fail_on_no_match`` is set."""


class ApiError(InplaceError):
    """The API server answered with an error status (or could not be reached: status 0).
    ``causes``: the reasons listed in the Status body's details.causes (for example NodeCapacity)."""

    def __init__(self, msg, status=0, reason=None, retry_after=None, causes=(), **details):
        super().__init__(msg, **details)
        self.status = status
        self.reason = reason
        self.retry_after = retry_after
        self.causes = tuple(causes)


class NotFoundError(ApiError):
    """404."""


class ForbiddenError(ApiError):
    """403, or a permission the run needs that the API server says the user lacks."""


class RbacForbidden(ForbiddenError):
    """403 from the authorizer: the credentials lack a permission (the one refusal that RBAC fixes)."""


class QuotaExceeded(ForbiddenError):
    """403 from the ResourceQuota admission: the change would exceed a quota of the namespace."""


class PodSecurityViolation(ForbiddenError):
    """403 from the PodSecurity admission: the pod would violate the namespace's Pod Security level."""


class NodeCapacityError(ForbiddenError):
    """403 from the PodResize admission (cause NodeCapacity): more than the node's allocatable."""


class AdmissionDenied(ApiError):
    """An admission webhook or ValidatingAdmissionPolicy denied the write (any status; 403 by default).
    ``webhook``: the name of the webhook or policy."""

    def __init__(self, msg, webhook=None, **kwargs):
        super().__init__(msg, **kwargs)
        self.webhook = webhook


RBAC_HINT = 'rbac/inplace-k8s-rbac.yml lists what each module needs'
_WEBHOOK_RE = re.compile(r'admission webhook "([^"]+)" denied the request')
_POLICY_RE = re.compile(r"ValidatingAdmissionPolicy '([^']+)'(?: with binding '[^']+')? denied request")
_RBAC_RE = re.compile(r'\bcannot [a-z]+ resource "')

# (class, reason, fix) for each refusal the API server's message tells apart; docs/errors.md has the table.
REFUSALS = {
    'RBAC': (RbacForbidden, 'Forbidden', 'grant it: ' + RBAC_HINT),
    'QuotaExceeded': (QuotaExceeded, 'refused by a ResourceQuota',
                      'raise the quota (kubectl describe resourcequota -n <namespace>) or ask for less'),
    'AdmissionDenied': (AdmissionDenied, 'denied by admission',
                        'change the request to satisfy that policy, or ask its owners to allow it'),
    'PodSecurity': (PodSecurityViolation, 'refused by Pod Security admission',
                    'make the pod meet the namespace\'s pod-security.kubernetes.io/enforce level, or change that label'),
    'NodeCapacity': (NodeCapacityError, "more than the node's allocatable",
                     'ask for less than the node can hold (kubectl describe node), or move the pod to a larger node'),
}


def classify_refusal(status, message, causes=()):
    """Which refusal an error answer is: (key of REFUSALS, webhook or policy name or None), or (None, None)
    for any other error (a 403 of unknown origin is not blamed on RBAC)."""
    message = message or ''
    found = _WEBHOOK_RE.search(message) or _POLICY_RE.search(message)
    if found:
        return 'AdmissionDenied', found.group(1)
    if status != 403:
        return None, None
    if 'exceeded quota' in message:
        return 'QuotaExceeded', None
    if 'violates PodSecurity' in message:
        return 'PodSecurity', None
    if 'NodeCapacity' in causes or "didn't have enough allocatable" in message:
        return 'NodeCapacity', None
    if _RBAC_RE.search(message):
        return 'RBAC', None
    return None, None


class ConflictError(ApiError):
    """409, or a JSON-patch ``test`` that failed: the object changed since it was read."""


class TransientError(ApiError):
    """429, 5xx or a connection error: worth retrying after a backoff."""


class PodFailure(InplaceError):
    """A pod or one of its containers failed while an operation waited on it."""

    def __init__(self, pod, reason, message='', container=None):
        where = 'pod %s' % pod if container is None else 'pod %s container %s' % (pod, container)
        super().__init__('%s: %s%s' % (where, reason, ': %s' % message if message else ''))
        self.pod = pod
        self.container = container
        self.reason = reason
        self.message = message

    def as_dict(self):
        return {'container': self.container, 'reason': self.reason, 'message': self.message}


class WaitTimeout(InplaceError):
    """A wait did not finish in time."""


class OperationFailed(InplaceError):
    """One or more pods failed; ``details`` carry the full result so the module can return it."""


def relist_or_raise(error):
    """The object of a watch's ERROR event: 'relist' when the watch's resourceVersion expired (410 Gone: list
    again and watch from the list), any other error raised as ApiError."""
    if error.get('code') == 410:
        return 'relist'
    raise ApiError(error.get('message') or 'watch error', status=error.get('code') or 0)
