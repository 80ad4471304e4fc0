import t from 'tap'
import {
  difference,
  EMPTY,
  equals,
  fromFieldsV1,
  fromPaths,
  intersection,
  isEmpty,
  members,
  pathString,
  toFieldsV1,
  union,
  withoutPrefixes,
} from '../operator/sandbox/apply/fieldset.ts'
import { builtinTopology, toFieldSet } from '../operator/sandbox/apply/index.ts'
import { topologyFromOpenAPI } from '../operator/sandbox/apply/crd-topology.ts'

t.test('fieldsV1 round trip keeps the format byte for byte', async (t) => {
  const cases: Record<string, unknown>[] = [
    {},
    { 'f:spec': { 'f:replicas': {} } },
    { 'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } } },
    { 'f:spec': { 'f:ports': { 'k:{"port":80,"protocol":"TCP"}': { '.': {}, 'f:port': {}, 'f:protocol': {} } } } },
    { 'f:metadata': { 'f:finalizers': { '.': {}, 'v:"a"': {}, 'v:"b"': {} } } },
    { 'f:list': { 'i:0': {}, 'i:1': { 'f:x': {} } } },
  ]
  for (const c of cases) t.equal(JSON.stringify(toFieldsV1(fromFieldsV1(c))), JSON.stringify(c))
})

t.test('path elements sort as structured-merge-diff sorts them', async (t) => {
  const set = fromPaths([
    ['f:z'],
    ['f:a'],
    ['f:ports', 'k:{"containerPort":8080,"protocol":"TCP"}'],
    ['f:ports', 'k:{"containerPort":80,"protocol":"UDP"}'],
    ['f:ports', 'k:{"containerPort":80,"protocol":"TCP"}'],
    ['f:ports', 'k:{"containerPort":9}'],
    ['f:mixed', 'i:10'],
    ['f:mixed', 'i:9'],
    ['f:mixed', 'v:"b"'],
    ['f:mixed', 'v:2'],
    ['f:mixed', 'v:true'],
    ['f:mixed', 'k:{"a":1}'],
    ['f:mixed', 'f:name'],
  ])
  const enc = toFieldsV1(set)
  t.same(Object.keys(enc), ['f:a', 'f:mixed', 'f:ports', 'f:z'])
  t.same(Object.keys(enc['f:ports'] as object), [
    'k:{"containerPort":9}',
    'k:{"containerPort":80,"protocol":"TCP"}',
    'k:{"containerPort":80,"protocol":"UDP"}',
    'k:{"containerPort":8080,"protocol":"TCP"}',
  ])
  t.same(Object.keys(enc['f:mixed'] as object), ['f:name', 'k:{"a":1}', 'v:2', 'v:"b"', 'v:true', 'i:9', 'i:10'])
})

t.test('"." appears only on members that have children', async (t) => {
  const s = fromPaths([['f:a'], ['f:a', 'f:b'], ['f:c', 'f:d']])
  t.same(toFieldsV1(s), { 'f:a': { '.': {}, 'f:b': {} }, 'f:c': { 'f:d': {} } })
})

t.test('set algebra', async (t) => {
  const a = fromPaths([['f:x'], ['f:y', 'f:z'], ['f:y', 'f:w']])
  const b = fromPaths([['f:y', 'f:z'], ['f:q']])
  t.same(toFieldsV1(union(a, b)), { 'f:q': {}, 'f:x': {}, 'f:y': { 'f:w': {}, 'f:z': {} } })
  t.same(toFieldsV1(difference(a, b)), { 'f:x': {}, 'f:y': { 'f:w': {} } })
  t.same(toFieldsV1(intersection(a, b)), { 'f:y': { 'f:z': {} } })
  t.ok(isEmpty(difference(a, a)))
  t.ok(isEmpty(intersection(a, EMPTY)))
  t.equal(union(a, EMPTY), a, 'identity kept when nothing changes')
  t.equal(difference(a, fromPaths([['f:nope']])), a)
  t.ok(equals(union(a, b), union(b, a)))
  t.notOk(equals(a, b))
  t.same(toFieldsV1(withoutPrefixes(a, [['f:y']])), { 'f:x': {} }, 'a prefix removes its whole subtree')
  t.same(toFieldsV1(difference(fromPaths([['f:a'], ['f:a', 'f:b']]), fromPaths([['f:a']]))), { 'f:a': { 'f:b': {} } }, 'removing a member keeps its children')
})

t.test('members iterate a node\'s members before its subtrees; paths print as the server prints them', async (t) => {
  const s = fromPaths([
    ['f:spec', 'f:template', 'f:spec', 'f:containers', 'k:{"name":"app"}', 'f:image'],
    ['f:spec', 'f:replicas'],
    ['f:spec', 'f:ports', 'k:{"port":80,"protocol":"TCP"}'],
    ['f:metadata', 'f:finalizers', 'v:"x"'],
    ['f:list', 'i:3'],
  ])
  t.same(members(s).map(pathString), [
    '.list[3]',
    '.metadata.finalizers[="x"]',
    '.spec.replicas',
    '.spec.ports[port=80,protocol="TCP"]',
    '.spec.template.spec.containers[name="app"].image',
  ])
})

t.test('apply sets: leaves, atomic nodes, list-map items with ".", map entries, sets', async (t) => {
  const pod = builtinTopology('', 'v1', 'Pod')
  const cases: { name: string; obj: Record<string, unknown>; want: Record<string, unknown> }[] = [
    { name: 'scalars', obj: { spec: { hostname: 'h' } }, want: { 'f:spec': { 'f:hostname': {} } } },
    { name: 'atomic map (nodeSelector)', obj: { spec: { nodeSelector: { a: 'b' } } }, want: { 'f:spec': { 'f:nodeSelector': {} } } },
    { name: 'atomic list (tolerations)', obj: { spec: { tolerations: [{ key: 'k' }] } }, want: { 'f:spec': { 'f:tolerations': {} } } },
    // typed/tofieldset.go visitMapItems: an empty map is a member (so is emptyDir: {} in a volume).
    { name: 'an empty struct is owned', obj: { spec: { securityContext: {}, volumes: [{ name: 'v', emptyDir: {} }] } }, want: { 'f:spec': { 'f:securityContext': {}, 'f:volumes': { 'k:{"name":"v"}': { '.': {}, 'f:emptyDir': {}, 'f:name': {} } } } } },
    { name: 'an empty list-map is not', obj: { spec: { containers: [{ name: 'c', env: [] }] } }, want: { 'f:spec': { 'f:containers': { 'k:{"name":"c"}': { '.': {}, 'f:name': {} } } } } },
    {
      name: 'env list-map',
      obj: { spec: { containers: [{ name: 'c', env: [{ name: 'A', value: '1' }] }] } },
      want: { 'f:spec': { 'f:containers': { 'k:{"name":"c"}': { '.': {}, 'f:env': { 'k:{"name":"A"}': { '.': {}, 'f:name': {}, 'f:value': {} } }, 'f:name': {} } } } },
    },
    {
      name: 'unknown nested struct fields are not members',
      obj: { spec: { affinity: { podAffinity: { x: 1 } } } },
      want: { 'f:spec': { 'f:affinity': { 'f:podAffinity': { 'f:x': {} } } } },
    },
  ]
  for (const c of cases) t.same(toFieldsV1(toFieldSet(c.obj as never, pod, '/v1, Kind=Pod')), c.want, c.name)
  const cr = topologyFromOpenAPI({ type: 'object', properties: { spec: { type: 'object', properties: { extra: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } } } })
  t.same(toFieldsV1(toFieldSet({ spec: { extra: { a: { b: 1 } } } } as never, cr, 'x')), { 'f:spec': { 'f:extra': { 'f:a': { '.': {}, 'f:b': {} } } } }, 'deduced maps: every entry is a member')
})
