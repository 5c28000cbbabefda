# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Analysis checks between the steps of a rollout (the rollout_analysis module): GET a JSON document
(any HTTP endpoint, or a Prometheus instant query), evaluate a JMESPath condition on it and call the
check success, failure or inconclusive.

A measurement is inconclusive when there is nothing to judge: the endpoint is unreachable, times out,
answers an HTTP error, a redirect not followed, more than max_body_bytes or something that is not JSON
(analysis_fetch.py: the GET and its bounds), Prometheus answers an error or no sample, the
check's value is null or empty, or the condition evaluates to null (it compared a missing field). An
inconclusive measurement is tried again, ``interval`` seconds later, up to ``tries`` measurements; the
first success or failure decides the check; a check whose every measurement was inconclusive is
inconclusive. The outcome of a list of checks: failure if any failed, else inconclusive if any was
inconclusive, else success."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import time

try:
    import jmespath
    from jmespath.exceptions import JMESPathError
    HAS_JMESPATH = True
    JMESPATH_IMPORT_ERROR = None
except ImportError as exc:  # pragma: no cover - reported by the module
    jmespath = None
    JMESPathError = Exception
    HAS_JMESPATH = False
    JMESPATH_IMPORT_ERROR = exc

import os

from urllib.parse import urlencode, urlsplit

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import analysis_fetch

SUCCESS, FAILURE, INCONCLUSIVE = 'success', 'failure', 'inconclusive'
# What a Prometheus query reports as the check's value unless the check names one: the sample values.
PROMETHEUS_VALUE = {'vector': 'data.result[].value[1]', 'scalar': 'data.result[1]',
                    'matrix': 'data.result[].values[-1][1]', 'string': 'data.result[1]'}
MAX_VALUE_CHARS = 500
MAX_BODY_BYTES = 1024 * 1024


class Check(object):
    """One check, validated: the URL to GET, the compiled condition and value expressions."""

    def __init__(self, spec, index):
        self.name = spec.get('name') or 'check %d' % (index + 1)
        where = 'rollout_analysis check %r' % self.name
        prometheus = spec.get('prometheus')
        if bool(spec.get('url')) == bool(prometheus):
            raise ValidationError('%s: give either url (a JSON endpoint) or prometheus: {url, query}' % where)
        if prometheus and not (prometheus.get('url') and prometheus.get('query')):
            raise ValidationError('%s: prometheus needs url (the server, e.g. http://prometheus:9090) and query '
                                  '(PromQL)' % where)
        self.query = prometheus['query'] if prometheus else None
        base = prometheus['url'] if prometheus else spec['url']
        if not _http_url(base):
            raise ValidationError('%s: %s is not an http(s) URL' % (where, analysis_fetch.shown_url(base)))
        if prometheus:
            self.url = base.rstrip('/') + '/api/v1/query?' + urlencode({'query': self.query})
        else:
            self.url = base
        self.condition_text = spec.get('condition') or ''
        if not self.condition_text:
            raise ValidationError('%s: condition is required (a JMESPath expression; true means success)' % where)
        self.condition = _compile(self.condition_text, where, 'condition')
        self.value_text = spec.get('value')
        self.value = _compile(self.value_text, where, 'value') if self.value_text else None
        self.tries = _default(spec.get('tries'), 1)
        self.interval = _default(spec.get('interval'), 10)
        self.timeout = _default(spec.get('timeout'), 10)
        if self.tries < 1 or self.interval < 0 or self.timeout <= 0:
            raise ValidationError('%s: tries must be at least 1, interval not negative, timeout positive' % where)
        self.headers = spec.get('headers') or {}
        self.validate_certs = spec.get('validate_certs', True) is not False
        self.ca_path = spec.get('ca_path') or None
        if self.ca_path and not os.path.isfile(self.ca_path):
            raise ValidationError('%s: ca_path %s is not a file; give a PEM file of the CA certificate(s) that '
                                  'signed the endpoint\'s certificate' % (where, self.ca_path))
        self.follow_redirects = _default(spec.get('follow_redirects'), 'none')
        if self.follow_redirects not in analysis_fetch.FOLLOW_REDIRECTS:
            raise ValidationError('%s: follow_redirects must be one of %s, not %r'
                                  % (where, ', '.join(analysis_fetch.FOLLOW_REDIRECTS), self.follow_redirects))
        self.max_body_bytes = _default(spec.get('max_body_bytes'), MAX_BODY_BYTES)
        if self.max_body_bytes < 1:
            raise ValidationError('%s: max_body_bytes must be at least 1' % where)
        self.shown_url = analysis_fetch.shown_url(self.url)
        self.secrets = analysis_fetch.secrets(self.url, self.headers)

    def measure(self, fetch):
        """One measurement: (status, value, reason)."""
        try:
            code, body = fetch(self)
        except analysis_fetch.Refused as exc:  # a redirect not followed, too large, too slow: nothing to judge
            return INCONCLUSIVE, None, '%s: %s' % (self.shown_url, exc)
        except Exception as exc:  # unreachable, refused, timeout, TLS: nothing to judge
            return INCONCLUSIVE, None, 'no answer from %s: %s' % (self.shown_url, _short(exc))
        if code >= 300:
            return INCONCLUSIVE, None, 'HTTP %s from %s: %s' % (code, self.shown_url, _short(body))
        try:
            document = json.loads(body)
        except ValueError:
            return INCONCLUSIVE, None, 'not JSON from %s: %s' % (self.shown_url, _short(body))
        if self.query is not None:
            if not isinstance(document, dict) or document.get('status') != 'success':
                return INCONCLUSIVE, None, 'Prometheus answered %s: %s' % (
                    document.get('errorType', 'an error') if isinstance(document, dict) else 'no object',
                    _short(document.get('error', document) if isinstance(document, dict) else document))
            document = prometheus_numbers(document)
        value = self._value(document)
        if value is None or value == [] or value == {}:
            return INCONCLUSIVE, value, 'no data'
        try:
            verdict = self.condition.search(document)
        except JMESPathError as exc:
            return INCONCLUSIVE, value, 'the condition could not be evaluated: %s' % _short(exc)
        if verdict is None:
            return INCONCLUSIVE, value, 'the condition evaluated to null (a field it reads is missing: no data)'
        if verdict in (False, 0, '', [], {}):
            return FAILURE, value, 'the condition is false'
        return SUCCESS, value, 'the condition is true'

    def _value(self, document):
        if self.value is not None:
            return self.value.search(document)
        if self.query is not None:
            kind = (document.get('data') or {}).get('resultType')
            return jmespath.search(PROMETHEUS_VALUE.get(kind, 'data.result'), document)
        return document

    def run(self, fetch, sleep=time.sleep):
        """Measure until a success or a failure, at most ``tries`` times; the check's result."""
        status, value, reason, tried = INCONCLUSIVE, None, '', 0
        for tried in range(1, self.tries + 1):
            status, value, reason = self.measure(fetch)
            if status != INCONCLUSIVE:
                break
            if tried < self.tries:
                sleep(self.interval)
        result = {'name': self.name, 'status': status, 'reason': reason, 'value': _bounded(value),
                  'condition': self.condition_text, 'url': self.shown_url, 'tries': tried}
        if self.query is not None:
            result['query'] = self.query
        return analysis_fetch.scrub(result, self.secrets)   # an endpoint may echo a token in its answer


def _http_url(url):
    try:
        return urlsplit(url).scheme in ('http', 'https') and bool(urlsplit(url).hostname) and bool(
            analysis_fetch.origin(url))
    except ValueError:   # a port that is no number
        return False


def _default(value, default):
    return default if value is None else value


def _compile(text, where, field):
    try:
        return jmespath.compile(text)
    except JMESPathError as exc:
        raise ValidationError('%s: %s %r is not a valid JMESPath expression: %s' % (where, field, text, exc))


def _short(thing):
    text = thing if isinstance(thing, str) else (thing.decode('utf-8', 'replace') if isinstance(thing, bytes)
                                                 else str(thing))
    text = ' '.join(text.split())
    return text if len(text) <= 200 else text[:200] + '...'


def _bounded(value):
    """The value as reported: JSON-able and short."""
    text = json.dumps(value, sort_keys=True, default=str)
    return value if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS] + '...'


def _number(sample):
    try:
        return float(sample)
    except (TypeError, ValueError):
        return sample


def prometheus_numbers(document):
    """A Prometheus query answer with its sample values (strings in the HTTP API, "NaN" and "+Inf"
    included) as numbers, so that a condition compares them: [timestamp, "0.5"] -> [timestamp, 0.5]."""
    data = document.get('data') or {}
    kind, result = data.get('resultType'), data.get('result')
    if kind == 'scalar' and isinstance(result, list) and len(result) == 2:
        result = [result[0], _number(result[1])]
    elif kind == 'vector' and isinstance(result, list):
        result = [dict(series, value=[series['value'][0], _number(series['value'][1])])
                  if isinstance(series.get('value'), list) and len(series['value']) == 2 else series
                  for series in result]
    elif kind == 'matrix' and isinstance(result, list):
        result = [dict(series, values=[[point[0], _number(point[1])] for point in series.get('values') or []])
                  for series in result]
    return dict(document, data=dict(data, result=result))


def outcome(results):
    """failure if any check failed, else inconclusive if any was, else success (also for no check)."""
    statuses = [r['status'] for r in results]
    if FAILURE in statuses:
        return FAILURE
    return INCONCLUSIVE if INCONCLUSIVE in statuses else SUCCESS


def summary(results, verdict):
    """One line: the outcome and each check that did not succeed with its query, value and condition."""
    parts = []
    for r in results:
        if r['status'] == SUCCESS:
            continue
        parts.append('%s %s (%s%s, value %s, condition %s, %d tr%s)' % (
            r['name'], r['status'], r['reason'], '; query %s' % r['query'] if r.get('query') else '',
            json.dumps(r['value'], default=str), r['condition'], r['tries'], 'y' if r['tries'] == 1 else 'ies'))
    passed = len([r for r in results if r['status'] == SUCCESS])
    line = '%s: %d of %d check(s) passed' % (verdict, passed, len(results))
    return line + ('; ' + '; '.join(parts) if parts else '')


def run(checks, fetch, sleep=time.sleep, warn=None):
    """The rollout_analysis module's work: validate every check first (bad input changes nothing and
    measures nothing), warn once of the HTTPS checks whose certificate is not verified, then run them in order."""
    parsed = [Check(spec, index) for index, spec in enumerate(checks or [])]
    unverified = [c for c in parsed if not c.validate_certs and urlsplit(c.url).scheme == 'https']
    if unverified and warn:
        warn('rollout_analysis: TLS verification is off (validate_certs: false) for %s: anyone on the way can '
             'answer in the endpoint\'s name, and its headers go to whoever answers; give ca_path instead'
             % ', '.join('%s (%s)' % (c.name, analysis_fetch.origin(c.url)) for c in unverified))
    results = [check.run(fetch, sleep) for check in parsed]
    verdict = outcome(results)
    return {'changed': False, 'outcome': verdict, 'checks': results, 'summary': summary(results, verdict)}
