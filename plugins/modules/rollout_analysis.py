#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
module: rollout_analysis
short_description: Judge a rollout step by metrics (HTTP JSON or Prometheus queries and JMESPath conditions)
version_added: 1.0.0
description:
  - Runs a list of checks, in order. A check GETs a JSON document, either from any HTTP(S) endpoint (O(checks[].url))
    or as a Prometheus instant query (O(checks[].prometheus)), and evaluates O(checks[].condition), a JMESPath
    expression, on it. A true result is a V(success), a false one a V(failure).
  - A measurement is V(inconclusive) when there is nothing to judge - the endpoint is unreachable, times out, answers
    an HTTP error, a redirect not followed (O(checks[].follow_redirects)), more than O(checks[].max_body_bytes) or no
    JSON, Prometheus answers an error or no sample, the check's value is null or empty, or the
    condition evaluates to null (it read a missing field). Inconclusive measurements are tried again after
    O(checks[].interval) seconds, up to O(checks[].tries) measurements. The first success or failure decides.
  - The outcome is V(failure) if a check failed, else V(inconclusive) if a check stayed inconclusive, else V(success).
    The module itself never fails on an outcome - the caller decides (the role C(inplace.k8s.rollout) halts or rolls
    back on V(failure) and halts, workload held, on V(inconclusive)). It fails on bad input, before any request.
  - Prometheus sample values (strings in its HTTP API) are turned into numbers before the condition is evaluated, so
    that C(data.result[0].value[1] < `0.05`) compares numbers.
  - It only sends HTTP GET requests to the given URLs; it needs no access to Kubernetes. The proxy environment
    variables (C(HTTPS_PROXY), C(NO_PROXY)...) apply, as for Ansible's C(ansible.builtin.uri).
  - "Secrets stay out of the results: a URL is shown with its user-info, its token-like path segments (a run of 16
    or more letters and digits mixing both, as webhook URLs carry) and the values of credential-like query
    parameters replaced by C(***) (a parameter whose name contains C(token), C(secret), C(passw), C(pwd), C(key),
    C(auth), C(credential), C(signature) or C(session), or is C(sig), C(jwt) or C(code), in any case), and these values
    and the header values are replaced by C(***) in every reason, value and summary (an endpoint may echo them)."
author:
  - inplace.k8s contributors (@inplace-k8s)
requirements:
  - jmespath
options:
  checks:
    description: The checks, run in order.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: A name for the check in the results (default C(check N)).
        type: str
      url:
        description: A URL that answers a JSON document to GET. Give either O(checks[].url) or O(checks[].prometheus).
        type: str
      prometheus:
        description: A Prometheus instant query, sent as GET C(<url>/api/v1/query?query=<query>).
        type: dict
        suboptions:
          url:
            description: The Prometheus server, for example C(http://prometheus.monitoring:9090).
            type: str
            required: true
          query:
            description: The PromQL expression.
            type: str
            required: true
      condition:
        description:
          - A JMESPath expression evaluated on the JSON document (for Prometheus, the whole query answer, C(status)
            and C(data) with C(resultType) and C(result)). A true value is a success; false, 0 or empty is a
            failure; null is inconclusive.
        type: str
        required: true
      value:
        description:
          - A JMESPath expression for the value the results report. When it is null or empty the measurement is
            inconclusive (no data).
          - The default is the whole document, and for Prometheus the sample values (C(data.result[].value[1]) for
            a vector).
        type: str
      tries:
        description: How many measurements at most while the check is inconclusive.
        type: int
        default: 1
      interval:
        description: Seconds between two measurements.
        type: int
        default: 10
      timeout:
        description:
          - Seconds one measurement may take in all - connecting, each redirect followed, the headers and the whole
            body, however slowly the endpoint answers. Past it the measurement is V(inconclusive).
        type: int
        default: 10
      headers:
        description:
          - HTTP headers to send, for example an C(Authorization) header. Their values are never shown (they are
            replaced by C(***) wherever an answer echoes them).
          - They go to the check's origin only - a redirect to another origin is not followed
            (O(checks[].follow_redirects)), and C(Authorization), C(Proxy-Authorization) and C(Cookie) are never
            sent to another origin.
        type: dict
      follow_redirects:
        description:
          - V(none) - a redirect (HTTP 301, 302, 303, 307, 308) is not followed; the measurement is V(inconclusive)
            and its reason names the origin (scheme, host and port) the redirect points to.
          - V(same_origin) - redirects to the same scheme, host and port are followed, at most 5 in a row. One to
            another origin, from https to http, or out of http(s) is refused the same way as with V(none).
        type: str
        choices: [none, same_origin]
        default: none
      max_body_bytes:
        description:
          - The largest answer read, in bytes (after decompression). A longer one is not read past the limit; the
            measurement is V(inconclusive) and its reason names the limit.
        type: int
        default: 1048576
      validate_certs:
        description:
          - Whether to verify the TLS certificate of an HTTPS endpoint. V(false) gives one warning per module run,
            naming the checks; prefer O(checks[].ca_path).
        type: bool
        default: true
      ca_path:
        description:
          - A PEM file of the CA certificate(s) to verify an HTTPS endpoint with, instead of the system's ones.
        type: path
attributes:
  check_mode:
    description: Runs the checks as usual (they only read) and reports their outcome.
    support: full
  diff_mode:
    description: Nothing to compare; the module changes nothing.
    support: none
notes:
  - Not in the action group C(group/inplace.k8s.inplace) - the group's defaults (kubeconfig, wait_timeout) are no
    options of this module.
seealso:
  - name: JMESPath specification
    description: The expression language of O(checks[].condition) and O(checks[].value).
    link: https://jmespath.org/specification.html
  - name: Prometheus HTTP API
    description: The instant query answer format.
    link: https://prometheus.io/docs/prometheus/latest/querying/api/
'''

EXAMPLES = r'''
- name: Judge the canary by its error ratio and its p99 latency
  inplace.k8s.rollout_analysis:
    checks:
      - name: error ratio below 1%
        prometheus:
          url: http://prometheus.monitoring:9090
          query: sum(rate(http_requests_total{app="web",code=~"5.."}[2m])) / sum(rate(http_requests_total{app="web"}[2m]))
        condition: data.result[0].value[1] < `0.01`
        tries: 3
        interval: 20
      - name: p99 latency below 300 ms
        prometheus:
          url: http://prometheus.monitoring:9090
          query: histogram_quantile(0.99, sum(rate(http_request_duration_seconds_bucket{app="web"}[2m])) by (le))
        condition: data.result[0].value[1] < `0.3`
  register: analysis

- name: Any JSON endpoint, with a token
  inplace.k8s.rollout_analysis:
    checks:
      - name: no open incident
        url: https://status.example.com/api/incidents?service=web
        headers:
          Authorization: "Bearer {{ status_token }}"
        value: incidents
        condition: length(incidents[?state=='open']) == `0`
  register: analysis

- name: Stop on anything but a success
  ansible.builtin.assert:
    that: analysis.outcome == 'success'
    fail_msg: "{{ analysis.summary }}"
'''

RETURN = r'''
outcome:
  description: V(success), V(failure) (a check failed) or V(inconclusive) (no check failed, one had nothing to judge).
  returned: always
  type: str
  sample: failure
summary:
  description: One line - the outcome, and each check that did not succeed with its reason, query, value and condition.
  returned: always
  type: str
  sample: "failure: 1 of 2 check(s) passed; error ratio failure (the condition is false; query sum(rate(...)),
    value [0.07], condition data.result[0].value[1] < `0.01`, 1 try)"
checks:
  description: The result of each check, in order.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The check's name.
      type: str
    status:
      description: V(success), V(failure) or V(inconclusive).
      type: str
    reason:
      description: Why (the condition is true/false, no data, no answer from the URL and the error...).
      type: str
    value:
      description: The check's value at the last measurement (see O(checks[].value)); long values are cut.
      type: raw
    condition:
      description: The condition.
      type: str
    query:
      description: The Prometheus query.
      type: str
      returned: Prometheus checks
    url:
      description: The URL sent, its user-info and credential-like query parameter values replaced by C(***).
      type: str
    tries:
      description: The measurements made.
      type: int
  sample:
    - {name: error ratio, status: success, reason: the condition is true, value: [0.002],
       condition: "data.result[0].value[1] < `0.01`", query: "sum(rate(...))",
       url: "http://prometheus:9090/api/v1/query?query=...", tries: 1}
'''

from ansible_collections.inplace.k8s.plugins.module_utils import startup
startup.compile_once()   # before the other imports: they compile once, not twice (module_utils/startup.py)

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible.module_utils.urls import open_url

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import InplaceError
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import analysis, analysis_fetch

CHECK_SPEC = dict(
    name=dict(type='str'),
    url=dict(type='str'),
    prometheus=dict(type='dict', options=dict(url=dict(type='str', required=True),
                                              query=dict(type='str', required=True))),
    condition=dict(type='str', required=True),
    value=dict(type='str'),
    tries=dict(type='int', default=1),
    interval=dict(type='int', default=10),
    timeout=dict(type='int', default=10),
    headers=dict(type='dict', no_log=True),
    follow_redirects=dict(type='str', default='none', choices=['none', 'same_origin']),
    max_body_bytes=dict(type='int', default=1048576),
    validate_certs=dict(type='bool', default=True),
    ca_path=dict(type='path'),
)


def main():
    # no_log: Ansible would log the checks to the target's syslog on start, URL credentials (?api_key=) included.
    module = AnsibleModule(argument_spec=dict(checks=dict(type='list', elements='dict', required=True,
                                                          options=CHECK_SPEC)),
                           supports_check_mode=True, no_log=True)
    module.no_log_values.update(analysis_fetch.url_secrets(module.params['checks']))   # masked in what Ansible shows
    if not analysis.HAS_JMESPATH:
        module.fail_json(msg=missing_required_lib('jmespath'), exception=str(analysis.JMESPATH_IMPORT_ERROR))
    try:
        fetch = analysis_fetch.http_fetch(open_url)
        module.exit_json(**analysis.run(module.params['checks'], fetch, warn=module.warn))
    except InplaceError as exc:
        module.fail_json(msg=exc.msg, **exc.details)


if __name__ == '__main__':
    main()
