#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

# Test helper for the integration targets: one raw API request with the collection's own client
# (same auth options and K8S_AUTH_* variables), so the targets need neither kubectl nor kubernetes.core.

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
module: inplace_test_api
short_description: Send one request to the Kubernetes API (integration-test helper)
description:
  - Sends one JSON request and returns the decoded answer. Test helper, not part of the collection.
author:
  - inplace.k8s contributors (@inplace-k8s)
extends_documentation_fragment:
  - inplace.k8s.auth
options:
  method:
    description: HTTP method.
    type: str
    default: GET
    choices: [GET, POST, PATCH, DELETE]
  path:
    description: API path, for example C(/api/v1/namespaces/demo/pods).
    type: str
    required: true
  body:
    description: JSON body.
    type: raw
  content_type:
    description: Content type of the body (patches).
    type: str
  missing_ok:
    description: A 404 is not an error (returns C(found=false)).
    type: bool
    default: false
'''

RETURN = r'''
json:
  description: The decoded answer.
  returned: when found
  type: dict
found:
  description: The object existed.
  returned: always
  type: bool
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inplace.k8s.plugins.module_utils.args import AUTH_ARG_SPEC, argument_spec
from ansible_collections.inplace.k8s.plugins.module_utils.connection.client import Kube
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import InplaceError, NotFoundError
from ansible_collections.inplace.k8s.plugins.module_utils.options import Connection


def main():
    module = AnsibleModule(argument_spec=argument_spec(
        AUTH_ARG_SPEC, method={'type': 'str', 'default': 'GET', 'choices': ['GET', 'POST', 'PATCH', 'DELETE']},
        path={'type': 'str', 'required': True}, body={'type': 'raw'}, content_type={'type': 'str'},
        missing_ok={'type': 'bool', 'default': False}))
    params = module.params
    try:
        answer = Kube.connect(Connection.from_params(params)).request(params['method'], params['path'],
                                                                      body=params['body'],
                                                                      content_type=params['content_type'])
    except NotFoundError as exc:
        if params['missing_ok']:
            module.exit_json(changed=False, found=False)
        module.fail_json(msg=exc.msg, status=exc.status)
    except InplaceError as exc:
        module.fail_json(msg=exc.msg, status=getattr(exc, 'status', None))
    module.exit_json(changed=params['method'] != 'GET', found=True, json=answer)


if __name__ == '__main__':
    main()
