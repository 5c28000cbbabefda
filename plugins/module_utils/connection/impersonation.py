# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Whom the API server takes the caller for, as kubectl's ``--as``, ``--as-uid``, ``--as-group`` and
``--as-user-extra`` say it: from the module options (impersonate_user, impersonate_uid, impersonate_groups,
impersonate_extra) and from the kubeconfig user's fields ``as``, ``as-uid``, ``as-groups`` and ``as-user-extra``.

As with kubectl, an option given explicitly wins over the same field of the kubeconfig, field by field (an extra
key by key), and uid, groups or extras without a user are refused: the API server impersonates no one without
``Impersonate-User``. The headers are those of client-go: one ``Impersonate-Group`` line per group, one
``Impersonate-Extra-<key>`` line per value, the key percent-encoded where a header name cannot hold a byte.

The client checks every header value, these included, before anything is sent (headers.py).
"""

from collections import namedtuple

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError

USER, UID, GROUP, EXTRA = 'Impersonate-User', 'Impersonate-Uid', 'Impersonate-Group', 'Impersonate-Extra-'

# (field, module option, kubeconfig field)
FIELDS = (('user', 'impersonate_user', 'as'), ('uid', 'impersonate_uid', 'as-uid'),
          ('groups', 'impersonate_groups', 'as-groups'), ('extra', 'impersonate_extra', 'as-user-extra'))

# The bytes a header name may hold (RFC 9110 token characters) besides letters and digits; any other byte of an
# extra key is percent-encoded, and so is '%' itself, so that the API server's unescaping gives the key back.
_NAME_PUNCTUATION = frozenset(b"!#$&'*+-.^_`|~")


class Impersonation(namedtuple('Impersonation', 'user uid groups extra sources',
                               defaults=(None, None, (), (), None))):
    """``user``, ``uid``: str or None; ``groups``: tuple of str; ``extra``: tuple of (key, tuple of values);
    ``sources``: {field: where it was set (an option's name, or the kubeconfig's field and user)}, for messages."""

    __slots__ = ()

    def __bool__(self):
        return bool(self.user or self.uid or self.groups or self.extra)

    def source(self, field):
        return (self.sources or {}).get(field, field)

    def headers(self):
        """[(name, value, source)]: the header lines that say who to act as, in order."""
        found = []
        if self.user:
            found.append((USER, self.user, self.source('user')))
        if self.uid:
            found.append((UID, self.uid, self.source('uid')))
        found.extend((GROUP, group, self.source('groups')) for group in self.groups)
        for key, values in self.extra:
            found.extend((EXTRA + extra_key(key), value, '%s (key %s)' % (self.source('extra'), key))
                         for value in values)
        return found


def extra_key(key):
    """``key`` as it goes into an Impersonate-Extra- header name: its UTF-8 bytes, each byte that a header name
    cannot hold (and '%') as %XX, as client-go writes it and the API server reads it back."""
    return ''.join(chr(b) if (chr(b).isalnum() and b < 128) or b in _NAME_PUNCTUATION else '%%%02X' % b
                   for b in key.encode('utf-8'))


def _strings(value, where, lenient):
    """A tuple of strings from a list of strings (``lenient``: or one string)."""
    if lenient and isinstance(value, str):
        return (value,)
    if not isinstance(value, (list, tuple)) or not all(isinstance(item, str) for item in value):
        raise ValidationError('%s must be a list of strings' % where)
    return tuple(value)


def _parse(values, labels, lenient=False):
    """An Impersonation from {field: raw value}, checking the types; ``labels``: {field: its name in messages};
    ``lenient``: one string stands for a list of one (an option's value, not a kubeconfig's, which kubectl reads
    strictly)."""
    user, uid, groups, extra = (values.get(field) for field in ('user', 'uid', 'groups', 'extra'))
    for field, value in (('user', user), ('uid', uid)):
        if value is not None and not isinstance(value, str):
            raise ValidationError('%s must be a string, not %s' % (labels[field], type(value).__name__))
    groups = _strings(groups, labels['groups'], lenient) if groups else ()
    if extra and not isinstance(extra, dict):
        raise ValidationError('%s must be a mapping of key -> list of strings, not %s'
                              % (labels['extra'], type(extra).__name__))
    pairs = []
    for key, items in (extra or {}).items():
        if not isinstance(key, str) or not key:
            raise ValidationError('%s: every key must be a non-empty string' % labels['extra'])
        pairs.append((key, _strings(items, '%s (key %s)' % (labels['extra'], key), lenient) if items else ()))
    given = (('user', user), ('uid', uid), ('groups', groups), ('extra', pairs))
    sources = {field: labels[field] for field, value in given if value}
    return Impersonation(user or None, uid or None, groups, tuple(pairs), sources)


def from_options(params):
    """The impersonation the module options ask for (``params``: the auth options)."""
    return _parse({field: params.get(option) for field, option, _kube in FIELDS},
                  {field: option for field, option, _kube in FIELDS}, lenient=True)


def from_kubeconfig_user(user, name):
    """The impersonation a kubeconfig user entry asks for (``as``, ``as-uid``, ``as-groups``, ``as-user-extra``)."""
    return _parse({field: user.get(kube) for field, _option, kube in FIELDS},
                  {field: '%s of user %s in the kubeconfig' % (kube, name) for field, _option, kube in FIELDS})


def merged(explicit, kubeconfig):
    """``explicit`` (the options) over ``kubeconfig`` (its user's fields), field by field and an extra key by key,
    as kubectl's flags override its kubeconfig; refused when a uid, groups or extras come without a user."""
    kubeconfig = kubeconfig or Impersonation()
    sources = dict(kubeconfig.sources or {})
    sources.update(explicit.sources or {})
    extra = dict(kubeconfig.extra)
    extra.update(explicit.extra)
    if explicit.extra and kubeconfig.extra:
        sources['extra'] = '%s and %s' % (explicit.source('extra'), kubeconfig.source('extra'))
    result = Impersonation(explicit.user or kubeconfig.user, explicit.uid or kubeconfig.uid,
                           explicit.groups or kubeconfig.groups, tuple(extra.items()), sources)
    if not result.user and result:
        given = [result.source(field) for field in ('uid', 'groups', 'extra') if getattr(result, field)]
        raise ValidationError('%s set without a user to impersonate: the API server impersonates only a user '
                              '(Impersonate-User), as kubectl needs --as with --as-uid, --as-group or '
                              '--as-user-extra; set impersonate_user (or as in the kubeconfig user), or drop %s'
                              % (' and '.join(given), ' and '.join(given)))
    return result
