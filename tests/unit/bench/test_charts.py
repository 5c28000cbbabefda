# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/bench/charts.py draws valid SVG from a bench summary, with a point per measured size."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib.util
import os
import xml.dom.minidom

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
SPEC = importlib.util.spec_from_file_location('bench_charts', os.path.join(ROOT, 'tests', 'bench', 'charts.py'))
charts = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(charts)


def row(scenario, pods, wall, requests=100):
    return {'scenario': scenario, 'pods': pods, 'wall': wall, 'cluster_requests': {'PATCH pods': requests}}


def summary():
    return {'results': [row('image window 25%', 10, 4.0), row('image window 25%', 100, 11.0, 300),
                        row('native Deployment 25%/25%', 10, 5.0), row('native Deployment 25%/25%', 100, 25.0, 900),
                        row('traffic native', 100, 20.0), dict(row('role Deployment 25%', 100, 9.0), error='boom')]}


def test_charts_are_svg_with_every_point(tmp_path):
    written = charts.draw(summary(), str(tmp_path))
    assert [os.path.basename(p) for p in written] == ['wall.svg', 'requests.svg']
    wall = xml.dom.minidom.parse(written[0])
    circles = wall.getElementsByTagName('circle')
    assert len(circles) == 4                        # two sizes of two scenarios; the failed row is left out
    assert 'native Deployment 25%/25%, 100 pods: 25.0 s' in [c.getElementsByTagName('title')[0].firstChild.data
                                                             for c in circles]
    bars = xml.dom.minidom.parse(written[1]).getElementsByTagName('rect')
    assert len(bars) == 1 + 2                       # the background and one bar per scenario at 100 pods
    text = open(written[1]).read()
    assert '3.0' in text and '9.0' in text and 'traffic' not in text


def test_one_size_draws_no_wall_chart(tmp_path):
    written = charts.draw({'results': [row('image window 25%', 10, 4.0)]}, str(tmp_path))
    assert [os.path.basename(p) for p in written] == ['requests.svg']
