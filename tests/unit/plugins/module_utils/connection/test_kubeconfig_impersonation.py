# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Impersonation as kubectl reads it: the kubeconfig user's as, as-uid, as-groups and as-user-extra (for every
kind of credentials, exec plugins included), the module options over them field by field as kubectl's flags,
the headers they make (one line per group and per extra value, extra keys percent-encoded as client-go does),
and what is refused by name."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.connection import client, headers, impersonation, kubeconfig
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.options import Connection

from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.connection.kubeconfigs import SERVER, config, exec_kubeconfig, write

AS_USER = {'token': 't', 'as': 'u', 'as-uid': 'uid-1', 'as-groups': ['g1', 'g2'],
           'as-user-extra': {'scopes': ['view', 'edit'], 'acme.com/project': ['shop']}}


def identity(params):
    return kubeconfig.settings_from_params(params).impersonation


def lines(params):
    return [(name, value) for name, value, _source in identity(params).headers()]


def test_the_kubeconfig_users_fields_are_honoured(clean_env, tmp_path):
    expected = [('Impersonate-User', 'u'), ('Impersonate-Uid', 'uid-1'), ('Impersonate-Group', 'g1'),
                ('Impersonate-Group', 'g2'), ('Impersonate-Extra-scopes', 'view'), ('Impersonate-Extra-scopes', 'edit'),
                ('Impersonate-Extra-acme.com%2Fproject', 'shop')]
    assert lines({'kubeconfig': config(user=AS_USER)}) == expected
    from_file = lines({'kubeconfig': write(tmp_path / 'config', config(user=AS_USER))})   # YAML sorts the keys
    assert sorted(from_file, key=lambda line: line[0]) == sorted(expected, key=lambda line: line[0])


def test_a_user_without_impersonation_impersonates_no_one(clean_env):
    assert not identity({'kubeconfig': config(user={'token': 't'})})
    assert not identity({'host': SERVER})
    assert not client.Kube(kubeconfig.settings_from_params({'host': SERVER})).impersonating


def test_explicit_options_win_field_by_field_as_kubectls_flags(clean_env):
    """kubectl --as-group g3 with a kubeconfig user that has as: u keeps u and uses g3 only; --as-user-extra
    replaces the keys it names."""
    found = identity({'kubeconfig': config(user=AS_USER), 'impersonate_groups': ['g3'],
                      'impersonate_extra': {'scopes': ['admin'], 'team': 'blue'}})
    assert (found.user, found.uid, found.groups) == ('u', 'uid-1', ('g3',))
    assert dict(found.extra) == {'scopes': ('admin',), 'acme.com/project': ('shop',), 'team': ('blue',)}
    found = identity({'kubeconfig': config(user=AS_USER), 'impersonate_user': 'v'})
    assert (found.user, found.groups) == ('v', ('g1', 'g2'))
    assert found.source('user') == 'impersonate_user' and found.source('groups') == 'as-groups of user u-ctx in the kubeconfig'


def test_an_exec_users_impersonation_is_honoured(clean_env, tmp_path):
    """The kubernetes loader, which runs exec plugins, ignores as/as-groups: they are read here."""
    document = exec_kubeconfig(tmp_path)
    document['users'][0]['user'].update({'as': 'u', 'as-groups': ['g1', 'g2']})
    settings = kubeconfig.settings_from_params({'kubeconfig': write(tmp_path / 'config', document)})
    assert client.auth_headers(settings) == {'authorization': 'Bearer exec-token'}
    assert [(n, v) for n, v, _s in settings.impersonation.headers()] == [
        ('Impersonate-User', 'u'), ('Impersonate-Group', 'g1'), ('Impersonate-Group', 'g2')]


@pytest.mark.parametrize('params, message', [
    ({'impersonate_groups': ['g2']}, 'impersonate_groups set without a user to impersonate'),
    ({'impersonate_uid': 'x'}, 'impersonate_uid set without a user'),
    ({'impersonate_extra': {'k': ['v']}}, 'impersonate_extra set without a user'),
    ({'kubeconfig': config(user={'as-groups': ['g1']})}, 'as-groups of user u-ctx in the kubeconfig set without a user'),
    ({'kubeconfig': config(user={'as-user-extra': {'k': ['v']}})}, 'as-user-extra of user u-ctx in the kubeconfig set without'),
])
def test_groups_uid_or_extras_without_a_user_are_refused(clean_env, params, message):
    with pytest.raises(ValidationError, match=message) as caught:
        identity(dict(params, host=SERVER))
    assert 'Impersonate-User' in caught.value.msg and '--as' in caught.value.msg


@pytest.mark.parametrize('user, message', [
    ({'as': ['u']}, 'as of user u-ctx in the kubeconfig must be a string, not list'),
    ({'as': 'u', 'as-groups': 'g1'}, 'as-groups of user u-ctx in the kubeconfig must be a list of strings'),
    ({'as': 'u', 'as-groups': ['g1', 2]}, 'as-groups of user u-ctx in the kubeconfig must be a list of strings'),
    ({'as': 'u', 'as-user-extra': ['k']}, 'as-user-extra of user u-ctx in the kubeconfig must be a mapping'),
    ({'as': 'u', 'as-user-extra': {'k': 'v'}}, r'as-user-extra of user u-ctx in the kubeconfig \(key k\) must be a list'),
])
def test_kubeconfig_fields_of_the_wrong_type_are_refused_by_name(clean_env, user, message):
    with pytest.raises(ValidationError, match=message):
        identity({'kubeconfig': config(user=user)})


def test_options_of_the_wrong_type_are_refused_by_name(clean_env):
    with pytest.raises(ValidationError, match=r'impersonate_extra \(key k\) must be a list of strings'):
        identity({'host': SERVER, 'impersonate_user': 'u', 'impersonate_extra': {'k': [1]}})
    with pytest.raises(ValidationError, match='impersonate_extra must be a mapping'):
        identity({'host': SERVER, 'impersonate_user': 'u', 'impersonate_extra': 'k=v'})


def test_a_newline_from_the_kubeconfig_is_refused_naming_the_field(clean_env):
    settings = kubeconfig.settings_from_params({'kubeconfig': config(user={'as': 'u', 'as-groups': ['g1\nX: y']})})
    with pytest.raises(ValidationError, match='as-groups of user u-ctx in the kubeconfig holds a line feed'):
        client.Kube(settings)


@pytest.mark.parametrize('key, encoded', [
    ('scopes', 'scopes'), ('acme.com/project', 'acme.com%2Fproject'), ('with space', 'with%20space'),
    ('50%', '50%25'), ('a:b', 'a%3Ab'), ('j\u00fcrgen', 'j%C3%BCrgen'), ("!#$&'*+-.^_`|~", "!#$&'*+-.^_`|~"),
])
def test_extra_keys_are_percent_encoded_as_client_go_writes_them(key, encoded):
    assert impersonation.extra_key(key) == encoded


def test_the_options_reach_the_client_through_a_connection(clean_env, monkeypatch):
    """Every module and the rollout role's steps connect through options.Connection: the new options are in it."""
    params = {'host': SERVER, 'impersonate_user': 'u', 'impersonate_uid': 'id', 'impersonate_groups': ['g1', 'g2'],
              'impersonate_extra': {'k': ['v']}}
    kube = client.Kube.connect(Connection.from_params(params))
    assert [(n, v) for n, v in kube._headers if n.startswith('Impersonate-')] == [
        ('Impersonate-User', 'u'), ('Impersonate-Uid', 'id'), ('Impersonate-Group', 'g1'), ('Impersonate-Group', 'g2'),
        ('Impersonate-Extra-k', 'v')]
    assert headers.repeated(kube._headers) == ['Impersonate-Group']
