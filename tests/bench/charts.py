#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Charts of a bench run (bench/results.json) as SVG, written with the standard library only:

- wall.svg: wall time against the number of pods (log scales), in place against native;
- requests.svg: API server requests per pod at the largest pod count, by scenario.

    python tests/bench/charts.py bench/results.json bench/
"""

from __future__ import absolute_import, division, print_function

import json
import math
import os
import sys

WIDTH, HEIGHT = 720, 420
LEFT, RIGHT, TOP, BOTTOM = 70, 230, 40, 50
COLOURS = ('#1b6ca8', '#d1495b', '#2e933c', '#edae49', '#6a4c93', '#00798c', '#8d6a9f', '#444444')
# (scenario, label) drawn in wall.svg, in this order.
WALL_SERIES = (
    ('image window 25%', 'inplace_image, window 25%'),
    ('role Deployment 25%', 'role, Deployment 25%'),
    ('role StatefulSet 25%', 'role, StatefulSet 25%'),
    ('native Deployment 25%/25%', 'native Deployment 25%/25%'),
    ('native StatefulSet 25%', 'native StatefulSet 25%'),
    ('image 100%', 'inplace_image, all at once'),
)


def _escape(text):
    return str(text).replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')


def _svg(title, body):
    return ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
            'font-family="sans-serif" font-size="12">\n<rect width="100%%" height="100%%" fill="white"/>\n'
            '<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>\n%s</svg>\n'
            % (WIDTH, HEIGHT, WIDTH, HEIGHT, LEFT, _escape(title), '\n'.join(body)))


def _log_ticks(low, high):
    ticks, value = [], 10 ** math.floor(math.log10(low))
    while value <= high * 1.0001:
        for step in (1, 2, 5):
            if low / 1.0001 <= value * step <= high * 1.0001:
                ticks.append(value * step)
        value *= 10
    return ticks


def wall_chart(results):
    """SVG text: wall seconds against pods for WALL_SERIES (log-log), or None with fewer than 2 sizes."""
    series = []
    for scenario, label in WALL_SERIES:
        points = sorted((r['pods'], r['wall']) for r in results
                        if r.get('scenario') == scenario and r.get('wall') and 'error' not in r)
        if points:
            series.append((label, points))
    sizes = sorted(set(p for _label, points in series for p, _wall in points))
    if len(sizes) < 2:
        return None
    walls = [w for _label, points in series for _p, w in points]
    x0, x1 = math.log10(sizes[0]), math.log10(sizes[-1])
    y0, y1 = math.log10(min(walls) / 1.5), math.log10(max(walls) * 1.5)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(pods):
        return LEFT + (math.log10(pods) - x0) / (x1 - x0) * plot_w

    def y(wall):
        return TOP + plot_h - (math.log10(wall) - y0) / (y1 - y0) * plot_h

    body = ['<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>' % (LEFT, TOP, plot_w, plot_h)]
    for pods in sizes:
        body.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>' % (x(pods), TOP, x(pods), TOP + plot_h))
        body.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' % (x(pods), TOP + plot_h + 16, pods))
    for tick in _log_ticks(10 ** y0, 10 ** y1):
        body.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>' % (LEFT, y(tick), LEFT + plot_w, y(tick)))
        body.append('<text x="%d" y="%.1f" text-anchor="end">%g</text>' % (LEFT - 6, y(tick) + 4, tick))
    body.append('<text x="%d" y="%d" text-anchor="middle">pods</text>' % (LEFT + plot_w // 2, HEIGHT - 12))
    body.append('<text x="16" y="%d" transform="rotate(-90 16 %d)" text-anchor="middle">wall seconds</text>'
                % (TOP + plot_h // 2, TOP + plot_h // 2))
    for index, (label, points) in enumerate(series):
        colour = COLOURS[index % len(COLOURS)]
        dash = ' stroke-dasharray="6 4"' if label.startswith('native') else ''
        body.append('<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>' % (
            colour, dash, ' '.join('%.1f,%.1f' % (x(p), y(w)) for p, w in points)))
        for pods, wall in points:
            body.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s, %d pods: %.1f s</title></circle>'
                        % (x(pods), y(wall), colour, _escape(label), pods, wall))
        legend_y = TOP + 14 + index * 20
        body.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>' % (
            WIDTH - RIGHT + 14, legend_y - 4, WIDTH - RIGHT + 38, legend_y - 4, colour, dash))
        body.append('<text x="%d" y="%d">%s</text>' % (WIDTH - RIGHT + 44, legend_y, _escape(label)))
    return _svg('Wall time of an image rollout against pods (log scales)', body)


def requests_chart(results):
    """SVG text: API server requests per pod at the largest pod count, one bar per scenario."""
    rows = [r for r in results if r.get('cluster_requests') and 'error' not in r
            and not r.get('scenario', '').startswith('traffic')]
    if not rows:
        return None
    pods = max(r['pods'] for r in rows)
    bars = sorted(((r['scenario'], sum(r['cluster_requests'].values()) / float(pods)) for r in rows
                   if r['pods'] == pods), key=lambda item: item[1])
    plot_w, plot_h = WIDTH - LEFT - 60, HEIGHT - TOP - BOTTOM
    top = max(value for _name, value in bars) * 1.15
    row_h = plot_h / float(len(bars))
    body = []
    for index, (name, value) in enumerate(bars):
        colour = COLOURS[1] if name.startswith('native') else COLOURS[0]
        y = TOP + index * row_h
        width = value / top * (plot_w - 150)
        body.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (LEFT + 150, y + row_h * 0.6, _escape(name)))
        body.append('<rect x="%d" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>' % (
            LEFT + 156, y + row_h * 0.15, width, row_h * 0.7, colour))
        body.append('<text x="%.1f" y="%.1f">%.1f</text>' % (LEFT + 160 + width, y + row_h * 0.6, value))
    body.append('<text x="%d" y="%d">blue: in place (inplace.k8s); red: the native controllers; all API server '
                'requests (audit log) per pod</text>' % (LEFT, HEIGHT - 14))
    return _svg('API server requests per pod, %d pods' % pods, body)


def draw(summary, outdir):
    """Write the charts of ``summary`` (bench/results.json) into ``outdir``; the paths written."""
    written = []
    for name, chart in (('wall.svg', wall_chart), ('requests.svg', requests_chart)):
        text = chart(summary.get('results') or [])
        if text is None:
            continue
        path = os.path.join(outdir, name)
        with open(path, 'w') as handle:
            handle.write(text)
        written.append(path)
    return written


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print('usage: charts.py RESULTS_JSON OUTDIR', file=sys.stderr)
        return 2
    with open(argv[0]) as handle:
        summary = json.load(handle)
    for path in draw(summary, argv[1]):
        print('bench: chart %s' % path)
    return 0


if __name__ == '__main__':
    sys.exit(main())
