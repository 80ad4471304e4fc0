/**
 * Overlays in the render (operator/render/overlays.ts): strategic merge and JSON patches on the
 * workload kinds, the chart's bounds, hostile patches, the platform's overlays, and the strategic
 * merge patch compared with real kustomize (kubectl 1.34's `kubectl kustomize`) on the same object.
 */
import { execFileSync } from 'node:child_process'
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import YAML from 'yaml'
import { memcachedCRD } from '../operator/api/crd.ts'
import { chartValuesOf } from '../operator/render/spec-fields.ts'
import { DEFAULT_CHART_DIR, loadChart } from '../operator/render/chart.ts'
import { renderInstance, type RenderInput } from '../operator/render/engine.ts'
import { RenderError } from '../operator/render/errors.ts'
import { parseKinds } from '../operator/render/kinds.ts'
import { changedPaths, covers, formatPath, parsePath, touches, valueAt } from '../operator/render/overlay-paths.ts'
import { kindPatchMeta } from '../operator/kube/openapi-patch-meta.ts'
import { parsePlatformOverlays } from '../operator/render/overlays.ts'
import { matchesSelector, parseSelector } from '../operator/render/overlay-selector.ts'
import { kubectlPath } from './support/tools.ts'

const chart = loadChart()
type Any = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

const render = (spec: Record<string, unknown>, extra: Partial<RenderInput> = {}) => renderInstance(chart, { name: 'cache', namespace: 'default', spec, ...extra })
const objectOf = (r: ReturnType<typeof render>, kind: string) => r.objects.find((o) => o.kind === kind) as Any
const problemsOf = (spec: Record<string, unknown>, extra: Partial<RenderInput> = {}): string[] => {
  try {
    render(spec, extra)
  } catch (err) {
    if (err instanceof RenderError) return err.problems
    throw err
  }
  return []
}

const WORKLOADS = [
  { kind: 'Deployment', spec: { size: 2 } },
  { kind: 'StatefulSet', spec: { size: 2, workload: { kind: 'StatefulSet' } } },
]

for (const w of WORKLOADS) {
  t.test(`a strategic merge patch on a ${w.kind} merges tolerations and a container's env by name`, async (t) => {
    const r = render({ ...w.spec, overlays: [{ name: 'edge', target: { kind: w.kind }, strategicMerge: { spec: { template: { spec: { tolerations: [{ key: 'edge', operator: 'Exists' }], containers: [{ name: 'memcached', env: [{ name: 'MIRROR', value: 'on' }] }] } } } } }] })
    const pod = objectOf(r, w.kind).spec.template.spec
    t.same(pod.tolerations, [{ key: 'edge', operator: 'Exists' }])
    const memcached = pod.containers.find((c: Any) => c.name === 'memcached')
    t.same(memcached.env, [{ name: 'MIRROR', value: 'on' }])
    t.ok(memcached.args.length > 0, 'the rest of the container is the chart\'s')
    t.same(r.overlays, [{ overlay: 'spec.overlays[0] (edge)', object: `${w.kind}/cache`, paths: ['spec.template.spec.containers[name=memcached].env', 'spec.template.spec.tolerations'] }])
  })

  t.test(`a JSON patch on a ${w.kind} honours its test operation`, async (t) => {
    const ops = [
      { op: 'test', path: '/spec/template/spec/containers/0/name', value: 'memcached' },
      { op: 'add', path: '/spec/template/metadata/annotations/mesh.example.com~1inject', value: 'true' },
    ]
    const r = render({ ...w.spec, podAnnotations: { team: 'cache' }, overlays: [{ target: { group: 'apps', version: 'v1', kind: w.kind, name: 'cache' }, jsonPatch: ops }] })
    t.equal(objectOf(r, w.kind).spec.template.metadata.annotations['mesh.example.com/inject'], 'true')
    t.same(r.overlays[0]?.paths, ['spec.template.metadata.annotations["mesh.example.com/inject"]'])
    const failed = problemsOf({ ...w.spec, podAnnotations: { team: 'cache' }, overlays: [{ target: { kind: w.kind }, jsonPatch: [{ ...ops[0], value: 'other' }, ops[1]] }] })
    t.same(failed, [`spec.overlays[0]: target ${w.kind}/cache: jsonPatch[0] (test /spec/template/spec/containers/0/name): the test failed: the value differs`])
  })
}

t.test('a patch outside the chart\'s bounds is refused, naming the patch, the target and the path', async (t) => {
  t.same(problemsOf({ size: 1, overlays: [{ name: 'scale', target: { kind: 'Deployment' }, jsonPatch: [{ op: 'replace', path: '/spec/replicas', value: 5 }] }] }).map((p) => p.replace(/ \(kinds\.yaml.*$/, '')), ['spec.overlays[0] (scale): target Deployment/cache: spec.replicas: the chart does not declare it patchable for Deployment'])
  t.match(problemsOf({ size: 1, overlays: [{ target: { kind: 'Deployment' }, strategicMerge: { spec: { template: { spec: { containers: [{ name: 'sidecar', image: 'busybox' }] } } } } }] }), [/target Deployment\/cache: spec\.template\.spec\.containers\[name=sidecar\]: the chart does not declare it patchable/])
  t.match(problemsOf({ size: 1, overlays: [{ target: { kind: 'StatefulSet' }, strategicMerge: { metadata: { annotations: { a: 'b' } } } }] }), ['spec.overlays[0]: target kind=StatefulSet matches no rendered object'])
})

t.test('hostile patches are refused and nothing of them is rendered', async (t) => {
  const deployment = (strategicMerge: unknown) => ({ target: { kind: 'Deployment' }, strategicMerge })
  const cases: [string, unknown, RegExp][] = [
    ['privileged', deployment({ spec: { template: { spec: { containers: [{ name: 'memcached', securityContext: { privileged: true } }] } } } }), /containers\[name=memcached\]\.securityContext\.privileged: no overlay may change spec\.template\.spec\.containers\[\*\]\.securityContext/],
    ['a privileged sidecar', deployment({ spec: { template: { spec: { containers: [{ name: 'x', image: 'x', securityContext: { privileged: true } }] } } } }), /containers\[name=x\]: no overlay may change spec\.template\.spec\.containers\[\*\]\.securityContext/],
    ['hostNetwork', deployment({ spec: { template: { spec: { hostNetwork: true } } } }), /spec\.template\.spec\.hostNetwork: no overlay may change/],
    ['the pod spec replaced ($patch: replace)', deployment({ spec: { template: { spec: { $patch: 'replace', containers: [{ name: 'memcached', image: 'x' }] } } } }), /spec\.template\.spec\.securityContext: no overlay may change spec\.template\.spec\.securityContext/],
    ['the securityContext dropped ($retainKeys)', deployment({ spec: { template: { spec: { $retainKeys: ['containers'] } } } }), /spec\.template\.spec\.securityContext: no overlay may change/],
    ['a JSON patch moving the securityContext away', { target: { kind: 'Deployment' }, jsonPatch: [{ op: 'move', from: '/spec/template/spec/securityContext', path: '/metadata/annotations' }] }, /spec\.template\.spec\.securityContext: no overlay may change/],
    ['the pod securityContext removed', { target: { kind: 'Deployment' }, jsonPatch: [{ op: 'remove', path: '/spec/template/spec/securityContext' }] }, /spec\.template\.spec\.securityContext: no overlay may change/],
    ['another namespace (target)', { target: { kind: 'Deployment', namespace: 'kube-system' }, strategicMerge: {} }, /target namespace "kube-system" is not the instance's namespace "default"/],
    ['another namespace (object)', deployment({ metadata: { namespace: 'kube-system' } }), /metadata\.namespace: no overlay may change metadata\.namespace/],
    ['a cluster-scoped target', { target: { group: 'rbac.authorization.k8s.io', kind: 'ClusterRoleBinding' }, strategicMerge: { subjects: [] } }, /target kind "ClusterRoleBinding" in group "rbac\.authorization\.k8s\.io" is not one the chart renders/],
    ['a renamed object', deployment({ metadata: { name: 'other' } }), /metadata\.name: no overlay may change metadata\.name/],
    ['an owner reference', deployment({ metadata: { ownerReferences: [{ apiVersion: 'v1', kind: 'Namespace', name: 'x', uid: 'u' }] } }), /metadata\.ownerReferences: no overlay may change/],
    ['a standard label', deployment({ metadata: { labels: { 'app.kubernetes.io/managed-by': 'me' } } }), /metadata\.labels\["app\.kubernetes\.io\/managed-by"\]: no overlay may change/],
    ['__proto__', JSON.parse('{"target":{"kind":"Deployment"},"strategicMerge":{"metadata":{"__proto__":{"polluted":true}}}}'), /^spec\.overlays\[0\]\.strategicMerge\.metadata: key "__proto__" is not allowed$/],
    ['constructor', deployment({ constructor: { prototype: { polluted: true } } }), /key "constructor" is not allowed/],
    ['__proto__ in a JSON pointer', { target: { kind: 'Deployment' }, jsonPatch: [{ op: 'add', path: '/__proto__/polluted', value: true }] }, /^spec\.overlays\[0\]\.jsonPatch\[0\]\.path: "__proto__" is not allowed in a path$/],
    ['a 1 MB patch', deployment({ metadata: { annotations: { big: 'x'.repeat(1 << 20) } } }), /^spec\.overlays\[0\]: 1048\d+ bytes of JSON, more than the 32768 an overlay may have$/],
    ['deep nesting', deployment(JSON.parse('{"a":'.repeat(200) + '1' + '}'.repeat(200))), /nested deeper than 24 levels/],
  ]
  for (const [what, overlay, want] of cases) {
    const problems = problemsOf({ size: 1, overlays: [overlay] })
    t.equal(problems.length >= 1, true, `${what}: refused`)
    t.match(problems.join('\n'), want, what)
  }
  t.equal(({} as Any).polluted, undefined, 'no prototype was reached')
})

t.test('the platform\'s overlays apply before the CR\'s own, to the Memcacheds their selector matches', async (t) => {
  const platform = parsePlatformOverlays(YAML.parse(`
overlays:
  - name: mirror
    target: { kind: Deployment }
    jsonPatch:
      - { op: replace, path: /spec/template/spec/containers/0/image, value: "mirror.example.com/memcached:1.6.39" }
  - name: prod-only
    memcachedSelector: tier=prod
    target: { kind: Deployment }
    strategicMerge: { spec: { template: { spec: { priorityClassName: high } } } }
`), 'platform.yaml')
  const own = { target: { kind: 'Deployment' }, jsonPatch: [{ op: 'test', path: '/spec/template/spec/containers/0/image', value: 'mirror.example.com/memcached:1.6.39' }, { op: 'add', path: '/metadata/annotations', value: { seen: 'mirror' } }] }
  const dev = render({ size: 1, overlays: [own] }, { platformOverlays: platform, labels: { tier: 'dev' } })
  t.equal(objectOf(dev, 'Deployment').spec.template.spec.containers[0].image, 'mirror.example.com/memcached:1.6.39')
  t.equal(objectOf(dev, 'Deployment').spec.template.spec.priorityClassName, undefined, 'not selected')
  t.same(dev.overlays.map((c) => c.overlay), ['platform.yaml: overlays[0] (mirror)', 'spec.overlays[0]'], 'the CR\'s test saw the platform\'s patch')
  const prod = render({ size: 1 }, { platformOverlays: platform, labels: { tier: 'prod' } })
  t.equal(objectOf(prod, 'Deployment').spec.template.spec.priorityClassName, 'high')
  t.throws(() => parsePlatformOverlays({ overlays: [{ memcachedSelector: 'a in (', target: {}, strategicMerge: {} }] }, 'p.yaml'), /p\.yaml: overlays\[0\]\.memcachedSelector/)
  t.throws(() => parsePlatformOverlays({ patches: [] }, 'p.yaml'), /p\.yaml: must be a map with one key, overlays/)
})

t.test('malformed overlays are listed, each with its place', async (t) => {
  t.same(problemsOf({ size: 1, overlays: [{ target: { kind: 'Deployment' } }, { target: { kind: 'Deployment', regex: 'x' }, strategicMerge: {}, jsonPatch: [] }, { jsonPatch: [{ op: 'add', path: 'no-slash' }] }] }), [
    'spec.overlays[0]: exactly one of strategicMerge and jsonPatch is required',
    'spec.overlays[1]: exactly one of strategicMerge and jsonPatch is required',
    'spec.overlays[1].jsonPatch: must be a non-empty list of operations',
    'spec.overlays[1].target: unknown key "regex" (allowed: group, version, kind, name, namespace, labelSelector)',
    'spec.overlays[2].jsonPatch[0].path: must be a JSON pointer, e.g. /spec/template/spec/tolerations',
    'spec.overlays[2].jsonPatch[0].value: is required by add',
    'spec.overlays[2].target: is required (a strategic merge patch without one must name apiVersion, kind and metadata.name)',
  ])
  t.same(problemsOf({ size: 1, overlays: 'x' }), ['spec.overlays: must be a list of overlays'])
  t.same(problemsOf({ size: -1, overlays: 'x' }).length, 2, 'the values\' problems too')
})

t.test('a strategic merge patch without a target names its object, as in kustomize', async (t) => {
  const r = render({ size: 1, overlays: [{ strategicMerge: { apiVersion: 'v1', kind: 'Service', metadata: { name: 'cache', annotations: { 'mesh.example.com/port': '11211' } } } }] })
  t.equal(objectOf(r, 'Service').metadata.annotations['mesh.example.com/port'], '11211')
})

t.test('a label selector target picks objects by their labels', async (t) => {
  const r = render({ size: 1, overlays: [{ target: { labelSelector: 'app.kubernetes.io/component=cache,app.kubernetes.io/instance in (cache)' }, strategicMerge: { metadata: { annotations: { team: 'a' } } } }] })
  t.ok(r.objects.length > 1)
  t.ok(r.objects.every((o) => o.metadata.annotations?.team === 'a'), 'every object of the instance')
  t.equal(matchesSelector(parseSelector('a!=b,!c,d notin (x)'), { a: 'x' }), true)
  t.equal(matchesSelector(parseSelector('a'), {}), false)
  t.throws(() => parseSelector('a b c'), /not a label requirement/)
})

t.test('the render never sees the operator\'s spec fields as values', async (t) => {
  t.same(chartValuesOf({ size: 1, overlays: [] }), { size: 1 })
  const spec = { size: 1 }
  t.equal(chartValuesOf(spec), spec)
  const schema = (memcachedCRD(chart) as Any).spec.versions[0].schema.openAPIV3Schema.properties.spec
  t.equal(schema.properties.overlays.type, 'array')
  t.ok(schema.properties.size, 'beside the chart\'s values')
})

t.test('paths are read and written alike', async (t) => {
  for (const p of ['spec.template.spec.containers[*].image', 'metadata.annotations["a.b/c"]', 'spec.ports[0].port', 'spec.template.spec.containers[name=memcached].env']) t.equal(formatPath(parsePath(p)), p)
  for (const bad of ['', 'a..b', '[*]', 'a[', 'a[x]', 'a b', 'a.']) t.throws(() => parsePath(bad), { name: 'PathSyntaxError' }, bad)
})

t.test('a chart declares what may be patched; kinds.yaml refuses what no overlay may change, lint what its kind lacks', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mc-patchable-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  cpSync(DEFAULT_CHART_DIR, dir, { recursive: true })
  const kinds = readFileSync(join(dir, 'kinds.yaml'), 'utf8')
  writeFileSync(join(dir, 'kinds.yaml'), kinds.replace('      - spec.template.spec.dnsConfig\n', '      - spec.template.spec.dnsConfig\n      - spec.template.spec.securityContext.runAsUser\n'))
  t.throws(() => loadChart(dir, true), /kinds\.yaml: kinds\[3\]: patchable\[\d+\]: spec\.template\.spec\.securityContext\.runAsUser is within spec\.template\.spec\.securityContext, which no overlay may change/)
  writeFileSync(join(dir, 'kinds.yaml'), kinds.replace('      - spec.template.spec.dnsConfig\n', '      - spec.template.spec.tolerationz\n      - spec.template.spec.containers[key=x]\n      - spec.replicas[*]\n      - spec.template.spec.tolerations[key=x]\n      - metadata.annotations["a.b/c"]\n      - spec.template.spec.containers[name=memcached].env[*].valueFrom\n'))
  const { runLint } = await import('../operator/cli/lint.ts')
  const err: string[] = []
  const code = await runLint({ chart: dir, filename: [] }, { cwd: process.cwd(), stdout: () => {}, stderr: (s: string) => err.push(s) } as never)
  t.equal(code, 1)
  t.match(err.join(''), /kinds\.yaml: Deployment: patchable spec\.template\.spec\.tolerationz: spec\.template\.spec\.tolerationz: no such field/)
  t.match(err.join(''), /kinds\.yaml: Deployment: patchable spec\.template\.spec\.containers\[key=x\]: .*the list's items are not merged by key \(its merge key is name\)/)
  t.match(err.join(''), /kinds\.yaml: Deployment: patchable spec\.replicas\[\*\]: spec\.replicas\[\*\]: spec\.replicas is not a list/)
  t.match(err.join(''), /patchable spec\.template\.spec\.tolerations\[key=x\]: .*not merged by key \(it has no merge key: write \[\*\]\)/)
  t.notMatch(err.join(''), /a\.b\/c|valueFrom/, 'a map\'s key and a field under a list item are fields of the kind')
  const schema = JSON.parse(readFileSync(join(dir, 'values.schema.json'), 'utf8')) as { properties: Record<string, unknown> }
  schema.properties.overlays = { type: 'array', items: { type: 'string' } }
  writeFileSync(join(dir, 'values.schema.json'), JSON.stringify(schema))
  const again: string[] = []
  t.equal(await runLint({ chart: dir, filename: [] }, { cwd: process.cwd(), stdout: () => {}, stderr: (s: string) => again.push(s) } as never), 1)
  t.match(again.join(''), /values\.schema\.json: properties\.overlays: "overlays" is a field of the Memcached spec that the operator reads itself/)
})

/**
 * The oracles: `kubectl patch --local --type strategic` runs apimachinery's strategicpatch on the
 * Go types client-side, and `kubectl kustomize` runs kustomize's (kyaml) merge; kustomize does not
 * know `$setElementOrder` (it leaves the key in its output), so it is given the patch without it.
 */
t.test('a strategic merge overlay gives what kubectl patch and kustomize give for the same patch ($patch: delete, $setElementOrder, merge keys)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mc-kustomize-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const values = { size: 2, tolerations: [{ key: 'a', operator: 'Exists' }], podAnnotations: { keep: '1', drop: '2' } }
  // The chart renders no env: the platform's overlay gives the container one to merge into.
  const platformOverlays = parsePlatformOverlays({ overlays: [{ target: { kind: 'Deployment' }, jsonPatch: [{ op: 'add', path: '/spec/template/spec/containers/0/env', value: [{ name: 'A', value: '1' }, { name: 'B', value: '2' }] }] }] }, 'platform.yaml')
  const deployment = objectOf(render(values, { platformOverlays }), 'Deployment')
  writeFileSync(join(dir, 'deployment.yaml'), YAML.stringify(deployment))
  // kustomize reads a strategic merge patch as an object: it names its kind and name.
  const patchWith = (order: boolean): Any => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'cache', annotations: { added: 'yes' } },
    spec: {
      template: {
        metadata: { annotations: { drop: null } },
        spec: {
          tolerations: [{ key: 'b', operator: 'Exists' }],
          containers: [{ name: 'memcached', image: 'mirror.example.com/memcached:1.6.39', env: [{ name: 'B', $patch: 'delete' }, { name: 'C', value: '3' }], ...(order ? { '$setElementOrder/env': [{ name: 'A' }, { name: 'C' }] } : {}) }],
        },
      },
    },
  })
  const ours = (patch: Any) => objectOf(render({ ...values, overlays: [{ target: { kind: 'Deployment', name: 'cache' }, strategicMerge: patch }] }, { platformOverlays }), 'Deployment')
  const patched = JSON.parse(execFileSync(kubectlPath(), ['patch', '--local', '-f', join(dir, 'deployment.yaml'), '--type', 'strategic', '-p', JSON.stringify(patchWith(true)), '-o', 'json'], { encoding: 'utf8' })) as Any
  const withOrder = ours(patchWith(true))
  t.same(withOrder, patched, 'as kubectl patch')
  t.same(withOrder.spec.template.spec.containers[0].env.map((e: Any) => e.name), ['A', 'C'], '$patch: delete, then $setElementOrder')
  t.equal(withOrder.spec.template.metadata.annotations.drop, undefined, 'a null deletes')
  writeFileSync(join(dir, 'kustomization.yaml'), YAML.stringify({ resources: ['deployment.yaml'], patches: [{ target: { kind: 'Deployment', name: 'cache' }, patch: JSON.stringify(patchWith(false)) }] }))
  const kustomized = YAML.parse(execFileSync(kubectlPath(), ['kustomize', dir], { encoding: 'utf8' })) as Any
  t.same(ours(patchWith(false)), kustomized, 'as kustomize')
})

t.test('changes are found field by field, list items by their merge key', async (t) => {
  const meta = kindPatchMeta('apps/v1', 'Deployment')
  const before = { spec: { template: { spec: { containers: [{ name: 'a', image: 'x', env: [{ name: 'E', value: '1' }] }, { name: 'b', image: 'y' }], tolerations: [{ key: 't' }], dnsConfig: null } } } }
  const paths = (after: unknown) => changedPaths(before, after, meta).map((c) => formatPath(c.path))
  t.same(paths({ spec: { template: { spec: { containers: [{ name: 'a', image: 'z', env: [{ name: 'E', value: '1' }] }, { name: 'b', image: 'y' }], tolerations: [{ key: 't' }] } } } }), ['spec.template.spec.containers[name=a].image'], 'by key; a dropped null is no change')
  t.same(paths({ spec: { template: { spec: { containers: [{ name: 'b', image: 'y' }, { name: 'a', image: 'x', env: [{ name: 'E', value: '1' }] }], tolerations: [] } } } }), ['spec.template.spec.containers', 'spec.template.spec.tolerations'], 'a reorder is a change of the list; an atomic list changes whole')
  t.same(paths({ spec: { template: { spec: { containers: [{ name: 'a', image: 'x', env: [{ name: 'E', value: '1' }] }], tolerations: [{ key: 't' }] } } } }), ['spec.template.spec.containers[name=b]'], 'a removed item')
  const removed = changedPaths(before, { spec: { template: { spec: { containers: [{ name: 'a', image: 'x', env: [{ name: 'E', value: '1' }] }], tolerations: [{ key: 't' }] } } } }, meta)[0]!
  t.equal(touches(removed, parsePath('spec.template.spec.containers[*].image')), true, 'removing an item touches its fields')
  t.equal(touches(removed, parsePath('spec.template.spec.containers[*].securityContext')), false, 'but not those it lacked')
  t.equal(covers(parsePath('spec.ports[0]'), parsePath('spec.ports[0].port')), true)
  t.equal(covers(parsePath('spec.ports[1]'), parsePath('spec.ports[0].port')), false)
  t.equal(covers(parsePath('spec.containers[name=a]'), parsePath('spec.containers[name=b].image')), false)
  t.equal(valueAt(before, parsePath('spec.template.spec.containers[name=b].image')), 'y')
  t.equal(valueAt(before, parsePath('spec.template.spec.tolerations[0].key')), 't')
  t.equal(valueAt(before, parsePath('spec.template.spec.nothing.here')), undefined)
})

t.test('kinds.yaml: patchable is a list of paths', async (t) => {
  const problems = (patchable: unknown): string[] => {
    try {
      parseKinds({ kinds: [{ apiVersion: 'v1', kind: 'Service', resource: 'services', patchable }] }, 'kinds.yaml')
    } catch (err) {
      return (err as RenderError).problems
    }
    return []
  }
  t.same(problems('metadata.annotations'), ['kinds.yaml: kinds[0]: patchable: must be a list of paths, e.g. spec.template.spec.tolerations'])
  t.same(problems([3, 'a..b', 'metadata.name', 'metadata.annotations']), [
    'kinds.yaml: kinds[0]: patchable[0]: must be a path (a string)',
    'kinds.yaml: kinds[0]: patchable[1]: "a..b": a field name expected at character 3',
    'kinds.yaml: kinds[0]: patchable[2]: metadata.name is within metadata.name, which no overlay may change',
  ])
  t.same(problems(['metadata.annotations']), [])
})
