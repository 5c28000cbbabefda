# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.connection import access
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ApiError, ForbiddenError
from ansible_collections.inplace.k8s.plugins.module_utils.operations.image import ImageOperation
from ansible_collections.inplace.k8s.plugins.module_utils.operations.resize import ResizeOperation
from ansible_collections.inplace.k8s.plugins.module_utils.pods import drain


class Reviewer(object):
    """Answers SelfSubjectAccessReviews: everything allowed except ``denied`` ('verb resource/sub')."""

    def __init__(self, denied=(), error=None):
        self.denied = set(denied)
        self.error = error
        self.asked = []

    def request(self, method, path, query=None, body=None, content_type=None):
        assert (method, path) == ('POST', access.REVIEW_PATH)
        if self.error:
            raise self.error
        attrs = body['spec']['resourceAttributes']
        key = '%s %s%s' % (attrs['verb'], attrs['resource'], '/' + attrs['subresource'] if attrs['subresource'] else '')
        self.asked.append((attrs['namespace'], key))
        return {'status': {'allowed': key not in self.denied}}


def test_needed_per_operation_and_options():
    image = ImageOperation({'app': 'x:1'})
    resize = ResizeOperation({'app': {'requests': {'cpu': '1'}}}, version=(1, 36))
    assert access.needed(image, False, True, None) == [('watch', 'pods', ''), ('patch', 'pods', '')]
    assert access.needed(resize, False, True, drain.GateDrain('g')) == [
        ('watch', 'pods', ''), ('patch', 'pods', ''), ('patch', 'pods/resize', ''), ('patch', 'pods/status', '')]
    assert access.needed(image, True, False, drain.GateDrain('g')) == []          # check mode writes nothing
    old = ResizeOperation({'app': {'requests': {'cpu': '1'}}}, version=(1, 30))
    assert ('patch', 'pods/resize', '') not in access.needed(old, False, False, None)


def test_require_names_every_missing_permission():
    kube = Reviewer(denied=['patch pods/resize', 'patch pods/status'])
    with pytest.raises(ForbiddenError) as caught:
        access.require(kube, 'shop', [('patch', 'pods', ''), ('patch', 'pods/resize', ''), ('patch', 'pods/status', '')])
    assert caught.value.status == 403
    assert 'may not patch pods/resize, patch pods/status in namespace shop; nothing was changed' in caught.value.msg
    assert kube.asked == [('shop', 'patch pods'), ('shop', 'patch pods/resize'), ('shop', 'patch pods/status')]


def test_require_passes_when_allowed_or_unknown():
    access.require(Reviewer(), 'shop', [('patch', 'pods', '')])
    access.require(Reviewer(error=ApiError('no', status=404)), 'shop', [('patch', 'pods', '')])
    access.require(Reviewer(denied=['patch pods']), 'shop', [])
