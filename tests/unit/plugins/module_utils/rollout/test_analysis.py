# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import socket

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import analysis

PROM = 'http://prom:9090'


def vector(*values):
    return {'status': 'success', 'data': {'resultType': 'vector', 'result': [
        {'metric': {'app': 'web'}, 'value': [1700000000.0, v]} for v in values]}}


class Server(object):
    """fetch() answering from a list (one answer per call: a (code, document) pair or an exception)."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.urls = []
        self.headers = []

    def __call__(self, check):
        self.urls.append(check.url)
        self.headers.append(check.headers)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        code, document = answer
        return code, document if isinstance(document, (str, bytes)) else json.dumps(document).encode()


def run(checks, server):
    sleeps = []
    result = analysis.run(checks, server, sleeps.append)
    result['sleeps'] = sleeps
    return result


def prom_check(condition='data.result[0].value[1] < `0.05`', **extra):
    return dict({'name': 'errors', 'prometheus': {'url': PROM + '/', 'query': 'rate(errors[1m])'},
                 'condition': condition}, **extra)


def test_prometheus_success_compares_numbers_and_reports_query_value_condition():
    server = Server((200, vector('0.01')))
    result = run([prom_check()], server)
    assert result['outcome'] == 'success'
    check = result['checks'][0]
    assert check['status'] == 'success' and check['value'] == [0.01] and check['tries'] == 1
    assert check['query'] == 'rate(errors[1m])' and check['condition'] == 'data.result[0].value[1] < `0.05`'
    assert server.urls == [PROM + '/api/v1/query?query=rate%28errors%5B1m%5D%29']
    assert result['summary'] == 'success: 1 of 1 check(s) passed'


def test_prometheus_failure_names_the_reason():
    result = run([prom_check()], Server((200, vector('0.5'))))
    assert result['outcome'] == 'failure'
    assert result['checks'][0]['status'] == 'failure' and result['checks'][0]['value'] == [0.5]
    assert 'errors failure (the condition is false; query rate(errors[1m]), value [0.5]' in result['summary']
    assert 'condition data.result[0].value[1] < `0.05`' in result['summary']


def test_a_failure_is_not_retried():
    server = Server((200, vector('0.5')))
    result = run([prom_check(tries=5, interval=3)], server)
    assert result['checks'][0]['tries'] == 1 and len(server.urls) == 1 and result['sleeps'] == []


@pytest.mark.parametrize('answer, reason', [
    ((200, vector()), 'no data'),
    ((200, {'status': 'error', 'errorType': 'bad_data', 'error': 'parse error'}), 'Prometheus answered bad_data'),
    ((503, 'overloaded'), 'HTTP 503'),
    ((200, '<html>'), 'not JSON'),
    (socket.timeout('timed out'), 'no answer from'),
    (ConnectionRefusedError(111, 'Connection refused'), 'Connection refused'),
])
def test_nothing_to_judge_is_inconclusive(answer, reason):
    result = run([prom_check(tries=3, interval=7)], Server(answer))
    check = result['checks'][0]
    assert result['outcome'] == 'inconclusive' and check['status'] == 'inconclusive'
    assert reason in check['reason'] and check['tries'] == 3
    assert result['sleeps'] == [7, 7]


def test_inconclusive_then_success_stops_trying():
    server = Server((200, vector()), (200, vector('0.0')), (200, vector('0.9')))
    result = run([prom_check(tries=5, interval=1)], server)
    assert result['checks'][0]['status'] == 'success' and result['checks'][0]['tries'] == 2
    assert result['sleeps'] == [1]


def test_condition_on_a_missing_field_is_inconclusive_not_failure():
    result = run([{'url': 'http://app/stats', 'condition': 'errors < `3`'}], Server((200, {'requests': 10})))
    assert result['checks'][0]['status'] == 'inconclusive'
    assert 'null' in result['checks'][0]['reason']


@pytest.mark.parametrize('document, condition, status', [
    ({'errors': 0, 'requests': 100}, 'errors < `1`', 'success'),
    ({'errors': 5, 'requests': 100}, 'errors < `1`', 'failure'),
    ({'pods': [{'ready': True}, {'ready': True}]}, 'length(pods[?ready]) == length(pods)', 'success'),
    ({'pods': [{'ready': True}, {'ready': False}]}, 'pods[?!ready]', 'success'),
    ({'pods': [{'ready': True}]}, 'pods[?!ready]', 'failure'),
    ({'ok': 'yes'}, 'ok', 'success'),
    ({'count': 0}, 'count', 'failure'),
])
def test_plain_json_conditions(document, condition, status):
    assert run([{'url': 'http://app/stats', 'condition': condition}], Server((200, document)))['outcome'] == status


def test_value_expression_and_empty_value_is_no_data():
    ok = run([{'url': 'http://app/s', 'value': 'stats.errors', 'condition': 'stats.errors < `2`'}],
             Server((200, {'stats': {'errors': 1}})))
    assert ok['checks'][0]['value'] == 1 and ok['outcome'] == 'success'
    empty = run([{'url': 'http://app/s', 'value': 'items', 'condition': '`true`'}], Server((200, {'items': []})))
    assert empty['checks'][0]['status'] == 'inconclusive' and empty['checks'][0]['reason'] == 'no data'


def test_prometheus_scalar_and_matrix_values_are_numbers():
    scalar = {'status': 'success', 'data': {'resultType': 'scalar', 'result': [1.0, '3']}}
    assert run([prom_check('data.result[1] == `3`')], Server((200, scalar)))['checks'][0]['value'] == 3.0
    matrix = {'status': 'success', 'data': {'resultType': 'matrix', 'result': [
        {'metric': {}, 'values': [[1.0, '1'], [2.0, '2']]}]}}
    result = run([prom_check('max(data.result[0].values[*][1]) < `5`')], Server((200, matrix)))
    assert result['outcome'] == 'success' and result['checks'][0]['value'] == [2.0]


def test_nan_sample_compares_false():
    result = run([prom_check()], Server((200, vector('NaN'))))
    assert result['checks'][0]['status'] == 'failure'


def test_outcome_failure_wins_over_inconclusive_and_headers_are_sent():
    server = Server((200, vector('0.01')), (200, vector()), (200, vector('0.9')))
    checks = [prom_check(name='a', headers={'Authorization': 'Bearer s3cret'}), prom_check(name='b'),
              prom_check(name='c')]
    result = run(checks, server)
    assert [c['status'] for c in result['checks']] == ['success', 'inconclusive', 'failure']
    assert result['outcome'] == 'failure'
    assert server.headers[0] == {'Authorization': 'Bearer s3cret'}
    assert 's3cret' not in json.dumps(result)
    assert result['summary'].startswith('failure: 1 of 3 check(s) passed; b inconclusive (no data')


def test_no_check_is_success():
    assert analysis.run([], Server((200, {})))['outcome'] == 'success'


@pytest.mark.parametrize('check, message', [
    ({'condition': 'a'}, 'give either url'),
    ({'url': 'http://x', 'prometheus': {'url': PROM, 'query': 'up'}, 'condition': 'a'}, 'give either url'),
    ({'prometheus': {'url': PROM}, 'condition': 'a'}, 'prometheus needs url'),
    ({'url': 'ftp://x/y', 'condition': 'a'}, 'is not an http(s) URL'),
    ({'url': 'http://x'}, 'condition is required'),
    ({'url': 'http://x', 'condition': 'a <'}, 'is not a valid JMESPath expression'),
    ({'url': 'http://x', 'condition': 'a', 'value': '[['}, "value '[[' is not a valid JMESPath"),
    ({'url': 'http://x', 'condition': 'a', 'tries': 0}, 'tries must be at least 1'),
])
def test_bad_input_names_the_check_and_measures_nothing(check, message):
    server = Server((200, {}))
    good = {'name': 'first', 'url': 'http://x', 'condition': 'a'}
    with pytest.raises(ValidationError) as raised:
        analysis.run([good, dict(check, name='second')], server)
    assert message in raised.value.msg and "'second'" in raised.value.msg
    assert server.urls == []


def test_long_values_are_cut():
    result = run([{'url': 'http://x', 'condition': '`true`'}], Server((200, {'blob': 'x' * 2000})))
    assert len(result['checks'][0]['value']) <= analysis.MAX_VALUE_CHARS + 3
