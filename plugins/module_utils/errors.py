# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Typed exceptions raised by module_utils and caught once in a module's main()."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type


class InplaceError(Exception):
    """Base class. ``details`` are extra keys for ``fail_json`` (for example a partial result)."""

    def __init__(self, msg, **details):
        super(InplaceError, self).__init__(msg)
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
        super(ApiError, self).__init__(msg, **details)
        self.status = status
        self.reason = reason
        self.retry_after = retry_after
        self.causes = tuple(causes)


class NotFoundError(ApiError):
    """404."""


class ForbiddenError(ApiError):
    """403, or a permission the run needs that the API server says the user lacks."""


class ConflictError(ApiError):
    """409, or a JSON-patch ``test`` that failed: the object changed since it was read."""


class TransientError(ApiError):
    """429, 5xx or a connection error: worth retrying after a backoff."""


class PodFailure(InplaceError):
    """A pod or one of its containers failed while an operation waited on it."""

    def __init__(self, pod, reason, message='', container=None):
        where = 'pod %s' % pod if container is None else 'pod %s container %s' % (pod, container)
        super(PodFailure, self).__init__('%s: %s%s' % (where, reason, ': %s' % message if message else ''))
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
