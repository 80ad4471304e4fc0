import t from 'tap'
import { builtinPatchMeta, builtinTopology, patchMetaFromOpenAPI, strategicMergePatch, StrategicPatchError } from '../operator/sandbox/apply/index.ts'
import type { KubeObject } from '../operator/sandbox/types.ts'

const DEPLOY = builtinPatchMeta('apps', 'v1', 'Deployment', builtinTopology('apps', 'v1', 'Deployment'))

function live(): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'x', labels: { a: '1', b: '2' }, finalizers: ['f1'] },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: 'x' } },
      template: {
        metadata: { labels: { app: 'x' } },
        spec: {
          nodeSelector: { zone: 'a' },
          tolerations: [{ key: 't1' }],
          containers: [
            { name: 'app', image: 'a:1', args: ['-v'], env: [{ name: 'A', value: '1' }, { name: 'B', value: '2' }], ports: [{ containerPort: 80, protocol: 'TCP' }] },
            { name: 'side', image: 's:1' },
          ],
        },
      },
    },
  }
}

type Any = Record<string, any>

const cases: { name: string; patch: unknown; check: (o: Any) => unknown; want: unknown }[] = [
  { name: 'scalars replace', patch: { spec: { replicas: 3 } }, check: (o) => o.spec.replicas, want: 3 },
  { name: 'null deletes', patch: { metadata: { labels: { a: null } } }, check: (o) => o.metadata.labels, want: { b: '2' } },
  { name: 'maps merge', patch: { metadata: { labels: { c: '3' } } }, check: (o) => o.metadata.labels, want: { a: '1', b: '2', c: '3' } },
  {
    name: 'list-map items merge by key, new ones are appended',
    patch: { spec: { template: { spec: { containers: [{ name: 'side', image: 's:2' }, { name: 'new', image: 'n:1' }] } } } },
    check: (o) => o.spec.template.spec.containers.map((c: Any) => `${c.name}=${c.image}`),
    want: ['app=a:1', 'side=s:2', 'new=n:1'],
  },
  {
    name: 'nested list-maps merge (env by name)',
    patch: { spec: { template: { spec: { containers: [{ name: 'app', env: [{ name: 'B', value: '3' }, { name: 'C', value: '4' }] }] } } } },
    check: (o) => o.spec.template.spec.containers[0].env,
    want: [{ name: 'A', value: '1' }, { name: 'B', value: '3' }, { name: 'C', value: '4' }],
  },
  {
    name: '$patch: delete removes a list item',
    patch: { spec: { template: { spec: { containers: [{ name: 'side', $patch: 'delete' }] } } } },
    check: (o) => o.spec.template.spec.containers.map((c: Any) => c.name),
    want: ['app'],
  },
  {
    name: '$patch: replace on a list replaces it',
    patch: { spec: { template: { spec: { containers: [{ name: 'only', image: 'o' }, { $patch: 'replace' }] } } } },
    check: (o) => o.spec.template.spec.containers,
    want: [{ name: 'only', image: 'o' }],
  },
  {
    name: '$patch: replace on a map replaces it',
    patch: { metadata: { labels: { z: '9', $patch: 'replace' } } },
    check: (o) => o.metadata.labels,
    want: { z: '9' },
  },
  // patch.go handleDirectiveInMergeMap: a map that exists is emptied, not removed.
  { name: '$patch: delete on an existing map leaves {}', patch: { metadata: { labels: { $patch: 'delete' } } }, check: (o) => o.metadata.labels, want: {} },
  { name: '$patch: delete on an absent map adds nothing', patch: { metadata: { annotations: { $patch: 'delete' } } }, check: (o) => o.metadata.annotations, want: undefined },
  { name: 'atomic lists are replaced', patch: { spec: { template: { spec: { tolerations: [{ key: 't2' }] } } } }, check: (o) => o.spec.template.spec.tolerations, want: [{ key: 't2' }] },
  {
    name: 'args (atomic) replaced',
    patch: { spec: { template: { spec: { containers: [{ name: 'app', args: ['-x'] }] } } } },
    check: (o) => o.spec.template.spec.containers[0].args,
    want: ['-x'],
  },
  // patch.go mergeSlice: a union, the patch's items in the patch's order (normalizeElementOrder).
  { name: 'primitive merge lists (finalizers) union', patch: { metadata: { finalizers: ['f2', 'f1'] } }, check: (o) => o.metadata.finalizers, want: ['f2', 'f1'] },
  // mergeSortedSlice: a server-only item absent from the patch cannot be ordered against it and goes after.
  { name: 'primitive merge lists put the patch items first', patch: { metadata: { finalizers: ['f0'] } }, check: (o) => o.metadata.finalizers, want: ['f0', 'f1'] },
  { name: '$deleteFromPrimitiveList', patch: { metadata: { '$deleteFromPrimitiveList/finalizers': ['f1'] } }, check: (o) => o.metadata.finalizers, want: [] },
  {
    name: '$setElementOrder sets the order of a merged list',
    patch: { spec: { template: { spec: { '$setElementOrder/containers': [{ name: 'side' }, { name: 'app' }], containers: [{ name: 'side', image: 's:3' }] } } } },
    check: (o) => o.spec.template.spec.containers.map((c: Any) => `${c.name}=${c.image}`),
    want: ['side=s:3', 'app=a:1'],
  },
  {
    name: '$setElementOrder of a primitive list',
    patch: { metadata: { '$setElementOrder/finalizers': ['f2', 'f1'], finalizers: ['f2'] } },
    check: (o) => o.metadata.finalizers,
    want: ['f2', 'f1'],
  },
  {
    name: '$setElementOrder that does not match the patch list is refused',
    patch: { metadata: { '$setElementOrder/finalizers': ['f1'], finalizers: ['f2'] } },
    check: () => undefined,
    want: 'throws',
  },
  {
    name: '$retainKeys clears other fields',
    patch: { spec: { strategy: { $retainKeys: ['type'], type: 'Recreate' } } },
    check: (o) => o.spec.strategy,
    want: { type: 'Recreate' },
  },
  { name: 'maps merge even when apply sees them atomic (nodeSelector)', patch: { spec: { template: { spec: { nodeSelector: { disk: 'ssd' } } } } }, check: (o) => o.spec.template.spec.nodeSelector, want: { zone: 'a', disk: 'ssd' } },
  {
    name: 'ports merge by containerPort',
    patch: { spec: { template: { spec: { containers: [{ name: 'app', ports: [{ containerPort: 80, name: 'http' }] }] } } } },
    check: (o) => o.spec.template.spec.containers[0].ports,
    want: [{ containerPort: 80, protocol: 'TCP', name: 'http' }],
  },
  { name: 'new subtrees lose nulls and directives', patch: { spec: { paused: null, strategy: { type: 'Recreate', rollingUpdate: null } } }, check: (o) => [o.spec.paused, o.spec.strategy], want: [undefined, { type: 'Recreate' }] },
]

for (const c of cases) {
  t.test(c.name, async (t) => {
    const before = live()
    const snapshot = structuredClone(before)
    if (c.want === 'throws') {
      t.throws(() => strategicMergePatch(before, c.patch, DEPLOY), StrategicPatchError)
      return
    }
    const out = strategicMergePatch(before, c.patch, DEPLOY) as unknown as Any
    t.same(c.check(out), c.want)
    t.same(before, snapshot, 'the live object is not modified')
  })
}

t.test('malformed patches', async (t) => {
  t.throws(() => strategicMergePatch(live(), [1], DEPLOY), StrategicPatchError)
  t.throws(() => strategicMergePatch(live(), { metadata: { $patch: 'bogus' } }, DEPLOY), { message: 'unknown patch type: bogus in map: map[$patch:bogus]', status: 500 })
  t.throws(() => strategicMergePatch(live(), { metadata: { $retainKeys: ['labels'], name: 'x' } }, DEPLOY), { message: 'invalid patch format of retainKeys', status: 400 })
  t.throws(() => strategicMergePatch(live(), { metadata: { $setElementOrder: ['x'] } }, DEPLOY), { message: 'invalid patch format of setElementOrder list', status: 400 })
  t.throws(() => strategicMergePatch(live(), { metadata: { $deleteFromPrimitiveList: ['x'] } }, DEPLOY), { message: 'invalid patch format of primitive list', status: 400 })
  t.throws(() => strategicMergePatch(live(), { spec: { template: { spec: { containers: [{ image: 'x' }] } } } }, DEPLOY), /does not contain declared merge key: name/)
})

// The patch metadata is the kinds' Go struct tags (as upstream's OpenAPI definitions carry them),
// not the apply topology: the two differ where a list or struct is merged by one and not the other.
const meta = (group: string, version: string, kind: string) => builtinPatchMeta(group, version, kind, builtinTopology(group, version, kind))

t.test('a PodDisruptionBudget selector (patchStrategy: replace) is replaced, not merged', async (t) => {
  const pdb = { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'p' }, spec: { minAvailable: 1, selector: { matchLabels: { app: 'x', tier: 'cache' } } } } as unknown as KubeObject
  const out = strategicMergePatch(pdb, { spec: { selector: { matchLabels: { app: 'y' } } } }, meta('policy', 'v1', 'PodDisruptionBudget')) as unknown as Any
  t.same(out.spec, { minAvailable: 1, selector: { matchLabels: { app: 'y' } } })
})

t.test('a Deployment selector (no patch strategy, atomic to apply) merges', async (t) => {
  const out = strategicMergePatch(live(), { spec: { selector: { matchLabels: { tier: 'cache' } } } }, DEPLOY) as unknown as Any
  t.same(out.spec.selector, { matchLabels: { app: 'x', tier: 'cache' } })
})

t.test('container resources.claims (a list-map to apply, no patch strategy) are replaced', async (t) => {
  const d = live() as unknown as Any
  d.spec.template.spec.containers[0].resources = { claims: [{ name: 'a' }] }
  const out = strategicMergePatch(d as KubeObject, { spec: { template: { spec: { containers: [{ name: 'app', resources: { claims: [{ name: 'b' }] } }] } } } }, DEPLOY) as unknown as Any
  t.same(out.spec.template.spec.containers[0].resources.claims, [{ name: 'b' }])
})

t.test('a CustomResourceDefinition status.conditions (no patch strategy) is replaced', async (t) => {
  const crd = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'a.b' }, status: { conditions: [{ type: 'Established', status: 'True' }] } } as unknown as KubeObject
  const out = strategicMergePatch(crd, { status: { conditions: [{ type: 'NamesAccepted', status: 'True' }] } }, meta('apiextensions.k8s.io', 'v1', 'CustomResourceDefinition')) as unknown as Any
  t.same(out.status.conditions, [{ type: 'NamesAccepted', status: 'True' }])
})

t.test('a field the kind does not have, held as an object on both sides, is the struct lookup error', async (t) => {
  const d = live() as unknown as Any
  d.spec.bogus = { a: 1 }
  t.throws(() => strategicMergePatch(d as KubeObject, { spec: { bogus: { b: 2 } } }, DEPLOY), { message: 'unable to find api field in struct DeploymentSpec for the json field "bogus"', status: 500 })
})

t.test('patch metadata lookups fail as the struct reader fails', async (t) => {
  // A map field (labels) holding an object on both sides: a map has no fields to look up.
  const d = live() as unknown as Any
  d.metadata.labels = { a: { x: 1 } }
  t.throws(() => strategicMergePatch(d as KubeObject, { metadata: { labels: { a: { y: 2 } } } }, DEPLOY), { message: 'merging an object in json but data type is not struct, instead is: map', status: 500 })
  // A field is found by its JSON name, then case-insensitively, as encoding/json finds one.
  const [template, meta] = DEPLOY.forStruct('spec')[0].forStruct('Template')
  t.same(meta, { strategies: [''], mergeKey: '' })
  t.same(template.forStruct('spec')[0].forSlice('containers')[1], { strategies: ['merge'], mergeKey: 'name' })
})

t.test('a kind without a definition takes its patch metadata from its apply topology', async (t) => {
  const topology = builtinTopology('', 'v1', 'PodTemplate')
  const m = builtinPatchMeta('', 'v1', 'PodTemplate', topology)
  const pt = { apiVersion: 'v1', kind: 'PodTemplate', metadata: { name: 't', finalizers: ['a'] }, template: { spec: { containers: [{ name: 'a', image: 'x', args: ['1'] }] } } } as unknown as KubeObject
  const out = strategicMergePatch(pt, { metadata: { finalizers: ['b'] }, template: { spec: { containers: [{ name: 'a', args: ['2'] }, { name: 'b', image: 'y' }] } } }, m) as unknown as Any
  t.same(out.metadata.finalizers, ['b', 'a'], 'a set merges as a union, the patch\'s items first')
  t.same(out.template.spec.containers, [{ name: 'a', image: 'x', args: ['2'] }, { name: 'b', image: 'y' }], 'a list-map merges by its first key; an atomic list is replaced')
})

t.test('a patch strategy upstream does not know is an error', async (t) => {
  const bogus = patchMetaFromOpenAPI({ item: { properties: { list: { type: 'array', items: { type: 'string' }, 'x-kubernetes-patch-strategy': 'merge,replace,retainKeys' }, nested: { type: 'array', items: { type: 'array', items: { type: 'string' } } } } } }, { $ref: '#/definitions/item' })
  t.throws(() => strategicMergePatch({ list: ['a'] } as unknown as KubeObject, { list: ['b'] }, bogus), { message: 'unexpected patch strategy: [merge replace retainKeys]' })
  t.throws(() => strategicMergePatch({ nested: [['a']] } as unknown as KubeObject, { nested: [['b']] }, bogus), { message: 'unexpected slice of slice' })
})
