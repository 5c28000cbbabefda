# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from fractions import Fraction

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.pods import resources as res


def rr(requests=None, limits=None):
    return {'requests': dict(requests or {}), 'limits': dict(limits or {})}


# --------------------------------------------------------------------------- quantities

@pytest.mark.parametrize('text, value', [
    ('1', 1), ('1000m', 1), ('500m', Fraction(1, 2)), ('0.5', Fraction(1, 2)), ('.5', Fraction(1, 2)),
    ('1.', 1), ('+2', 2), ('1k', 1000), ('1M', 10 ** 6), ('1G', 10 ** 9), ('1E', 10 ** 18),
    ('128Mi', 128 * 2 ** 20), ('134217728', 134217728), ('1Gi', 2 ** 30), ('1.5Gi', 3 * 2 ** 29),
    ('100n', Fraction(1, 10 ** 7)), ('2u', Fraction(2, 10 ** 6)), ('1e3', 1000), ('5E-1', Fraction(1, 2)),
    ('12e+2', 1200), ('0', 0), ('-0', 0), (1, 1), (0.25, Fraction(1, 4)), (2.0, 2),
])
def test_parse_quantity(text, value):
    assert res.parse_quantity(text) == value


@pytest.mark.parametrize('text, message', [
    ('-1', 'negative'), ('-100m', 'negative'), ('lots', 'not a Kubernetes quantity'), ('1 Gi', 'not a'),
    ('1gi', 'not a'), ('1KiB', 'not a'), ('', 'not a'), ('1e', 'not a'), ('.', 'not a'), ('1.2.3', 'not a'),
    (True, 'not a quantity'), (None, 'not a quantity'), ([1], 'not a quantity'),
])
def test_parse_quantity_refuses(text, message):
    with pytest.raises(ValueError, match=message):
        res.parse_quantity(text)


@pytest.mark.parametrize('first, second, equal', [
    ('1', '1000m', True), ('128Mi', '134217728', True), ('0.5', '500m', True), ('1Gi', '1024Mi', True),
    ('1G', '1Gi', False), ('100m', '0.1', True), ('1', '1001m', False), (None, None, True), ('1', None, False),
])
def test_same_quantity(first, second, equal):
    assert res.same_quantity(first, second) is equal


@pytest.mark.parametrize('value, text', [(1, '1'), (0.5, '0.5'), (0.001, '0.001'), (' 2Gi ', '2Gi'), (0.0, '0')])
def test_quantity_text(value, text):
    assert res.quantity_text(value) == text


# --------------------------------------------------------------------------- reported vs desired (kubelet clamps)

@pytest.mark.parametrize('reported, desired, match', [
    (rr({'cpu': '1', 'memory': '128Mi'}), rr({'cpu': '1000m', 'memory': '134217728'}), True),
    (rr({'cpu': '2m'}), rr({'cpu': '1m'}), True),              # request <= 2m reported as 2m
    (rr({'cpu': '2m'}), rr({'cpu': '0'}), True),
    (rr({'cpu': '3m'}), rr({'cpu': '1m'}), False),
    (rr(limits={'cpu': '10m'}), rr(limits={'cpu': '5m'}), True),   # limit < 10m reported as 10m
    (rr(limits={'cpu': '10m'}), rr(limits={'cpu': '11m'}), False),
    (rr(limits={'memory': '10m'}), rr(limits={'memory': '5m'}), False),  # no clamp for memory
    (rr({'cpu': '100m'}), rr({'cpu': '100m', 'memory': '1Gi'}), False),  # missing in status
    (rr({'cpu': '100m', 'memory': '1Gi'}), rr({'cpu': '100m'}), False),
    ({}, rr(), True),
])
def test_reported_matches(reported, desired, match):
    assert res.reported_matches(reported, desired) is match


# --------------------------------------------------------------------------- input and merge

@pytest.mark.parametrize('given, expected', [
    ({'app': {'requests': {'cpu': 1}}}, {'app': rr({'cpu': '1'})}),
    ({'app': {'limits': {'memory': '1Gi', 'cpu': 0.5}}}, {'app': rr(limits={'memory': '1Gi', 'cpu': '0.5'})}),
    ({'app': {'requests': {'cpu': '100m'}, 'limits': None}}, {'app': rr({'cpu': '100m'})}),
])
def test_normalize_input(given, expected):
    assert res.normalize_input(given) == (expected, [])


@pytest.mark.parametrize('given, errors', [
    ({}, ['containers: give at least one']),
    ({'app': {}}, ['containers.app: give requests']),
    ({'app': 'big'}, ['containers.app: give requests']),
    ({'app': {'request': {'cpu': 1}}}, ['containers.app: unknown key(s) request']),
    ({'app': {'requests': 'cpu=1'}}, ['containers.app.requests: must be a mapping']),
    ({'app': {'requests': {'ephemeral-storage': '1Gi'}}},
     ['containers.app.requests.ephemeral-storage: only cpu and memory']),
    ({'app': {'limits': {'nvidia.com/gpu': 1}}}, ['containers.app.limits.nvidia.com/gpu: only cpu and memory']),
    ({'app': {'requests': {'cpu': '-1', 'memory': 'x'}}},
     ['containers.app.requests.cpu: \'-1\' is negative', 'containers.app.requests.memory: \'x\' is not']),
])
def test_normalize_input_errors(given, errors):
    found = res.normalize_input(given)[1]
    assert len(found) == len(errors)
    for error, expected in zip(found, errors):
        assert error.startswith(expected)


@pytest.mark.parametrize('current, partial, merged', [
    (rr({'cpu': '100m', 'memory': '64Mi'}, {'cpu': '200m', 'memory': '128Mi'}), rr({'cpu': '500m'}),
     rr({'cpu': '500m', 'memory': '64Mi'}, {'cpu': '200m', 'memory': '128Mi'})),
    (rr({'cpu': '100m'}), rr(limits={'memory': '1Gi'}),                # a new limit defaults its request
     rr({'cpu': '100m', 'memory': '1Gi'}, {'memory': '1Gi'})),
    (rr({'cpu': '100m'}, {'cpu': '1'}), rr(), rr({'cpu': '100m'}, {'cpu': '1'})),
    (rr(), rr({'cpu': '1'}), rr({'cpu': '1'})),
])
def test_merge(current, partial, merged):
    assert res.merge(current, partial) == merged


def test_of_spec_keeps_cpu_and_memory_only():
    spec = {'resources': {'requests': {'cpu': '1', 'ephemeral-storage': '1Gi'}, 'limits': {'memory': '1Gi'}}}
    assert res.of_spec(spec) == rr({'cpu': '1'}, {'memory': '1Gi'})
    assert res.of_spec({}) == rr()


@pytest.mark.parametrize('first, second, same', [
    (rr({'cpu': '1'}), rr({'cpu': '1000m'}), True),
    (rr({'cpu': '1'}), rr({'cpu': '1', 'memory': '1Gi'}), False),
    (rr(limits={'memory': '128Mi'}), rr(limits={'memory': '134217728'}), True),
    (rr(limits={'memory': '128Mi'}), rr({'memory': '128Mi'}), False),
])
def test_same_resources(first, second, same):
    assert res.same_resources(first, second) is same


def test_changed_and_restarting():
    spec = {'resizePolicy': [{'resourceName': 'memory', 'restartPolicy': 'RestartContainer'}]}
    current = rr({'cpu': '100m', 'memory': '64Mi'}, {'cpu': '200m', 'memory': '128Mi'})
    assert res.changed(current, res.merge(current, rr({'cpu': '0.1'}))) == []
    assert res.changed(current, res.merge(current, rr({'cpu': '1'}, {'memory': '1Gi'}))) == ['cpu', 'memory']
    assert res.restarting(spec, current, res.merge(current, rr({'cpu': '1'}))) == []
    assert res.restarting(spec, current, res.merge(current, rr({'memory': '100Mi'}))) == ['memory']
    assert res.resize_policy(spec, 'cpu') == 'NotRequired'
    assert res.resize_policy({}, 'memory') == 'NotRequired'


# --------------------------------------------------------------------------- QoS class

def pod_spec(*containers, **extra):
    spec = {'containers': [{'name': 'c%d' % i, 'resources': r} for i, r in enumerate(containers)]}
    spec.update(extra)
    return spec


G = rr({'cpu': '1', 'memory': '1Gi'}, {'cpu': '1', 'memory': '1Gi'})


@pytest.mark.parametrize('spec, qos', [
    (pod_spec({}), 'BestEffort'),
    (pod_spec(rr({'cpu': '0'})), 'BestEffort'),                               # zero counts as unset
    (pod_spec(rr(limits={'ephemeral-storage': '1Gi'})), 'BestEffort'),        # only cpu/memory count
    (pod_spec(G), 'Guaranteed'),
    (pod_spec(rr({'cpu': '1000m', 'memory': '1024Mi'}, {'cpu': '1', 'memory': '1Gi'})), 'Guaranteed'),
    (pod_spec(rr(limits={'cpu': '1', 'memory': '1Gi'})), 'Guaranteed'),       # requests default to limits
    (pod_spec(rr({'cpu': '500m', 'memory': '1Gi'}, {'cpu': '1', 'memory': '1Gi'})), 'Burstable'),
    (pod_spec(rr({'cpu': '1'}, {'cpu': '1'})), 'Burstable'),                  # memory limit missing
    (pod_spec(G, {}), 'Burstable'),                                           # one BestEffort container
    (pod_spec(G, G), 'Guaranteed'),
    (pod_spec(G, initContainers=[{'name': 'i', 'resources': rr({'cpu': '1'})}]), 'Burstable'),
    (pod_spec({}, resources=G), 'Guaranteed'),                                # pod-level resources decide
    (pod_spec(G, resources=rr({'cpu': '1'})), 'Burstable'),
])
def test_qos_class(spec, qos):
    assert res.qos_class(spec) == qos


def test_qos_class_with_overrides_and_errors():
    spec = pod_spec(G)
    assert res.qos_class(spec, {'c0': rr({'cpu': '1', 'memory': '1Gi'}, {'cpu': '2', 'memory': '1Gi'})}) == 'Burstable'
    assert res.qos_error(spec, {'c0': rr({'cpu': '2', 'memory': '1Gi'}, {'cpu': '2', 'memory': '1Gi'})}) is None
    message = res.qos_error(spec, {'c0': rr({'cpu': '1', 'memory': '1Gi'}, {'cpu': '2', 'memory': '1Gi'})})
    assert 'from Guaranteed to Burstable' in message and 'requests == limits' in message
    burstable = pod_spec(rr({'cpu': '1', 'memory': '1Gi'}, {'cpu': '2', 'memory': '1Gi'}))
    assert 'from Burstable to Guaranteed' in res.qos_error(burstable, {'c0': G})


# --------------------------------------------------------------------------- checks

@pytest.mark.parametrize('current, desired, errors', [
    (rr({'cpu': '1'}, {'cpu': '2'}), rr({'cpu': '2'}, {'cpu': '2'}), []),
    (rr({'cpu': '1'}, {'cpu': '2'}), rr({'cpu': '3'}, {'cpu': '2'}), ['containers.app.requests.cpu: 3 is above']),
    (rr({'memory': '1Gi'}, {'memory': '1Gi'}), rr({'memory': '1025Mi'}, {'memory': '1Gi'}),
     ['containers.app.requests.memory: 1025Mi is above']),
    (rr({'cpu': '1'}, {'cpu': '2'}), rr({'cpu': '1'}), ['containers.app.limits.cpu: resources cannot be removed']),
])
def test_container_errors(current, desired, errors):
    found = res.container_errors('app', current, desired)
    assert len(found) == len(errors)
    for error, expected in zip(found, errors):
        assert error.startswith(expected)


@pytest.mark.parametrize('before, after, decreased', [
    ('128Mi', '100Mi', True), ('128Mi', '134217728', False), ('128Mi', '1Gi', False), (None, '1Gi', False),
])
def test_memory_limit_decreased(before, after, decreased):
    current = rr(limits={'memory': before} if before else {})
    assert res.memory_limit_decreased(current, rr(limits={'memory': after})) is decreased


def test_describe():
    assert res.describe(rr({'cpu': '1', 'memory': '1Gi'})) == 'requests cpu=1 memory=1Gi, limits none'
