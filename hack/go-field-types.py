#!/usr/bin/env python3
"""Writes operator/kube/openapi/go-types.json: for each OpenAPI definition of
operator/kube/openapi/kubernetes-1.34.json, the Go type of each field whose type the schema alone
does not name (`v1.Protocol`, `v1.ResourceList`, `types.UID`), as reflect.Type.String() prints it in
encoding/json's UnmarshalTypeError. Read from the Go sources of k8s.io/api, k8s.io/apimachinery
(pkg/apis/meta/v1) and k8s.io/apiextensions-apiserver (pkg/apis/apiextensions/v1).

usage: hack/go-field-types.py <dir with api/, meta/v1/, apiext/v1/ *.go> > operator/kube/openapi/go-types.json
"""
import json, os, re, sys

src = sys.argv[1]
root = os.path.join(os.path.dirname(__file__), '..', 'operator', 'kube', 'openapi')
defs = json.load(open(os.path.join(root, 'kubernetes-1.34.json')))['definitions']

# Go import alias -> package name (reflect prints the package name).
ALIASES = {'metav1': 'v1', 'resource': 'resource', 'intstr': 'intstr', 'types': 'types', 'runtime': 'runtime',
           'apiequality': 'equality', 'corev1': 'v1', 'v1': 'v1', 'autoscalingv1': 'v1', 'rbacv1': 'v1', 'time': 'time'}

def go_files(pkgdir):
    d = os.path.join(src, pkgdir)
    return [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith('.go')]

struct_re = re.compile(r'^type (\w+) struct \{\n(.*?)^\}', re.M | re.S)
field_re = re.compile(r'^\s*(\w+)?\s+([^\s`]+)\s+`json:"([^"]*)"', re.M)
embed_re = re.compile(r'^\s*([\w.]+)\s+`json:"([^"]*)"', re.M)

def structs(pkgdir):
    out = {}
    for f in go_files(pkgdir):
        text = open(f).read()
        for m in struct_re.finditer(text):
            name, body = m.group(1), m.group(2)
            fields = []
            for line in body.split('\n'):
                line = re.sub(r'//.*', '', line) if '`' not in line else line
                if line.strip().startswith('//'):
                    continue
                e = embed_re.match(line)
                if e and ',inline' in e.group(2):
                    fields.append(('inline', e.group(1)))
                    continue
                fm = field_re.match(line)
                if fm and fm.group(1):
                    fields.append((fm.group(3).split(',')[0], fm.group(2)))
            out[name] = fields
    return out

def reflect_name(t, pkg):
    """A Go type expression of package `pkg` as reflect.Type.String() spells it (pointers stripped: the decoder reports the element)."""
    t = t.lstrip('*')
    if t.startswith('[]'):
        return '[]' + reflect_name(t[2:], pkg) if t != '[]byte' else '[]uint8'
    if t.startswith('map['):
        key, rest = t[4:].split(']', 1)
        return 'map[' + reflect_name(key, pkg) + ']' + reflect_name(rest, pkg)
    if t == 'byte':
        return 'uint8'
    if '.' in t:
        alias, n = t.split('.', 1)
        return ALIASES.get(alias, alias) + '.' + n
    if t in ('string', 'bool', 'int', 'int32', 'int64', 'float64', 'float32', 'uint8', 'uint16', 'uint32', 'uint64', 'interface{}'):
        return t
    return pkg + '.' + t

def default_name(s):
    """What the schema alone implies (see goTypeOf in openapi-validate.ts)."""
    if '$ref' in s:
        r = s['$ref'].rsplit('/', 1)[1]
        parts = r.split('.')
        return parts[-2] + '.' + parts[-1]
    t = s.get('type')
    if t == 'string':
        return '[]uint8' if s.get('format') == 'byte' else 'string'
    if t == 'integer':
        return 'int64' if s.get('format') == 'int64' else 'int32'
    if t == 'number':
        return 'float64'
    if t == 'boolean':
        return 'bool'
    if t == 'array':
        return '[]' + default_name(s.get('items', {}))
    if t == 'object' and isinstance(s.get('additionalProperties'), dict):
        return 'map[string]' + default_name(s['additionalProperties'])
    return '?'

PKG_DIRS = {'io.k8s.apimachinery.pkg.apis.meta.v1': 'meta/v1', 'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1': 'apiext/v1'}
cache = {}
out = {}
for name, d in sorted(defs.items()):
    prefix, sname = name.rsplit('.', 1)
    if prefix in PKG_DIRS:
        pkgdir = PKG_DIRS[prefix]
    elif prefix.startswith('io.k8s.api.'):
        pkgdir = 'api/' + prefix[len('io.k8s.api.'):].replace('.', '/')
    else:
        continue
    if not os.path.isdir(os.path.join(src, pkgdir)):
        continue
    if pkgdir not in cache:
        cache[pkgdir] = structs(pkgdir)
    ss = cache[pkgdir]
    pkg = pkgdir.rsplit('/', 1)[1]
    def flatten(n):
        res = {}
        for fname, ftype in ss.get(n, []):
            if fname == 'inline':
                res.update(flatten(ftype.split('.')[-1]))
            elif fname not in ('', '-'):
                res[fname] = ftype
        return res
    if sname not in ss:
        continue
    fields = flatten(sname)
    props = d.get('properties', {})
    diff = {}
    for p, ps in props.items():
        if p not in fields:
            continue
        got = reflect_name(fields[p], pkg)
        if got != default_name(ps):
            diff[p] = got
    if diff:
        out[name] = diff
json.dump(out, sys.stdout, indent=1, sort_keys=True)
sys.stdout.write('\n')
