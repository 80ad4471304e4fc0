import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import t from 'tap'
import YAML from 'yaml'
import { runCli } from '../operator/cli/program.ts'
import { SAMPLES_DIR } from '../operator/cli/lint.ts'
import { chartWith } from './support/chart.ts'
import { captureIO } from './support/io.ts'
import { tempDir } from './support/tmp.ts'
import { withoutTapHooks } from './support/tap-env.ts'

const root = resolve(import.meta.dirname, '..')
const sample = join(SAMPLES_DIR, 'cache_v1alpha1_memcached.yaml')
const tmp = tempDir('mc-cli-')
const file = (name: string, text: string): string => {
  const p = join(tmp, name)
  writeFileSync(p, text)
  return p
}
const run = async (args: string[], stdin = '') => {
  const io = captureIO(stdin)
  const code = await runCli(args, io)
  return { code, out: io.out(), err: io.err() }
}
const docs = (text: string): any[] => YAML.parseAllDocuments(text, { version: '1.1' }).map((d) => d.toJS())

t.test('render prints the manifests of a CR, ready for kubectl apply', async (t) => {
  const r = await run(['render', '-f', sample])
  t.equal(r.code, 0)
  t.equal(r.err, '')
  t.same(docs(r.out).map((o) => `${o.kind}/${o.metadata.namespace}/${o.metadata.name}`), [
    'Service/default/memcached-sample',
    'Deployment/default/memcached-sample',
    'PodDisruptionBudget/default/memcached-sample',
  ])
  t.match(r.out, /^---\n# Source: memcached\/templates\/service\.ejs\n/)
})

t.test('render reads standard input with -f -', async (t) => {
  const r = await run(['render', '-f', '-'], readFileSync(sample, 'utf8'))
  t.equal(r.code, 0)
  t.equal(docs(r.out).length, 3)
})

t.test('render reads several files and multi-document streams, and Lists', async (t) => {
  const two = file('two.yaml', '---\napiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: a}\nspec: {size: 1}\n---\n---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: cache.example.com/v1alpha1\n  kind: Memcached\n  metadata: {name: b, namespace: team}\n  spec: {size: 1}\n')
  const r = await run(['render', '-f', two, '-f', sample])
  t.equal(r.code, 0, r.err)
  t.same(docs(r.out).map((o) => `${o.kind}/${o.metadata.namespace}/${o.metadata.name}`), [
    'Service/default/a', 'Deployment/default/a', 'Service/team/b', 'Deployment/team/b',
    'Service/default/memcached-sample', 'Deployment/default/memcached-sample', 'PodDisruptionBudget/default/memcached-sample',
  ])
})

t.test('-o json prints a v1 List', async (t) => {
  const r = await run(['render', '-f', sample, '-o', 'json'])
  t.equal(r.code, 0)
  const list = JSON.parse(r.out)
  t.equal(list.kind, 'List')
  t.same(list.items.map((o: any) => o.kind), ['Service', 'Deployment', 'PodDisruptionBudget'])
})

t.test('-n sets the namespace of CRs without one, and conflicts like kubectl', async (t) => {
  const r = await run(['render', '-f', sample, '-n', 'cache'])
  t.equal(r.code, 0)
  t.ok(docs(r.out).every((o) => o.metadata.namespace === 'cache'))
  const own = file('own.yaml', 'apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: a, namespace: x}\nspec: {size: 1}\n')
  const c = await run(['render', '-f', own, '-n', 'y'])
  t.equal(c.code, 1)
  t.match(c.err, /the namespace from the provided object "x" does not match the namespace "y"/)
})

t.test('--values and --set override every spec, in that order', async (t) => {
  const values = file('values.yaml', 'size: 5\nport: 2000\n')
  const r = await run(['render', '-f', sample, '--values', values, '--set', 'port=3000', '--set-string', 'podAnnotations.a=1'])
  t.equal(r.code, 0, r.err)
  const dep = docs(r.out).find((o) => o.kind === 'Deployment')
  t.equal(dep.spec.replicas, 5)
  t.equal(dep.spec.template.spec.containers[0].ports[0].containerPort, 3000)
  t.same(dep.spec.template.metadata.annotations, { a: '1' })
})

t.test('invalid input: exit 1, every reason on stderr, nothing on stdout', async (t) => {
  const bad = file('bad.yaml', `${readFileSync(sample, 'utf8')}---\napiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: bad}\nspec: {size: -1, port: x}\n`)
  const r = await run(['render', '-f', bad])
  t.equal(r.code, 1)
  t.equal(r.out, '', 'no partial output that kubectl could half-apply')
  t.match(r.err, /Memcached default\/bad: spec\.size: must be >= 0/)
  t.match(r.err, /Memcached default\/bad: spec\.port: must be integer/)
})

t.test('input that is not a Memcached is refused with its place', async (t) => {
  const cases: [string, RegExp][] = [
    ['apiVersion: cache.example.com/v1\nkind: Memcached\nmetadata: {name: x}\n', /document 1: expected apiVersion cache\.example\.com\/v1alpha1 and kind Memcached/],
    ['apiVersion: v1\nkind: ConfigMap\n', /document 1: not a Kubernetes object: expected apiVersion cache\.example\.com\/v1alpha1 and kind Memcached, or another object with apiVersion, kind and metadata\.name/],
    ['apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: Bad_Name}\n', /metadata\.name "Bad_Name" must be a DNS subdomain/],
    ['apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nspec: {}\n', /metadata is required/],
    ['apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: a, namespace: "A b"}\n', /metadata\.namespace "A b" must be a DNS label/],
    ['apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: a}\nspec: [1]\n', /spec must be a map/],
    ['- 1\n', /document 1: not a Kubernetes object/],
    ['a: [\n', /:\d+: /],
    ['# nothing\n', /no Memcached resource in the input/],
  ]
  for (const [text, message] of cases) {
    const r = await run(['render', '-f', '-'], text)
    t.equal(r.code, 1, text)
    t.match(r.err, message)
  }
  const missing = await run(['render', '-f', join(tmp, 'missing.yaml')])
  t.equal(missing.code, 1)
  t.match(missing.err, /missing\.yaml: cannot read: no such file or directory \(ENOENT\)/)
  const badValues = await run(['render', '-f', sample, '--values', file('v.yaml', '- 1\n')])
  t.match(badValues.err, /a values file must be a map/)
  const brokenValues = await run(['render', '-f', sample, '--values', file('v2.yaml', 'a: [\n')])
  t.match(brokenValues.err, /v2\.yaml:\d+: /)
  const missingValues = await run(['render', '-f', sample, '--values', join(tmp, 'none.yaml')])
  t.match(missingValues.err, /none\.yaml: cannot read: no such file or directory \(ENOENT\)/)
})

t.test('usage errors exit 2', async (t) => {
  for (const args of [['render'], ['render', '-f', sample, '-o', 'xml'], ['render', '--bogus'], ['nonsense'], ['render', '-f', '-', '-f', '-']]) {
    const r = await run(args)
    t.equal(r.code, 2, args.join(' '))
    t.match(r.err, /error|unknown/i)
  }
})

t.test('--help and --version exit 0', async (t) => {
  const help = await run(['--help'])
  t.equal(help.code, 0)
  t.match(help.out, /render/)
  const version = await run(['--version'])
  t.equal(version.code, 0)
  t.equal(version.out.trim(), JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version)
})

t.test('lint passes on the bundled chart: minimal values (on each platform too) and its ci/ example values', async (t) => {
  const r = await run(['lint'])
  t.equal(r.code, 0, r.err)
  t.match(r.out, /ok \(11 templates, 10 kinds, 14 instances rendered into \d+ objects: minimal values \(also on openshift\), 11 ci\/ values files\)/)
})

t.test('lint reports a broken chart: schema, templates and renders', async (t) => {
  const schema = JSON.parse(readFileSync(join(root, 'charts/memcached/values.schema.json'), 'utf8'))
  schema.properties.extra = { description: 'untyped' }
  schema.properties.uniq = { type: 'array', uniqueItems: true, items: { type: 'string' } }
  schema.properties.ref = { $ref: '#/properties/size' }
  const dir = chartWith({
    'values.schema.json': JSON.stringify(schema),
    'templates/bad.ejs': 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: <%= fullname() %>\n',
    'Chart.yaml': 'apiVersion: v2\nname: memcached\nversion: 0.1.0\n',
  })
  const r = await run(['lint', '--chart', dir])
  t.equal(r.code, 1)
  t.match(r.err, /Chart\.yaml: description is empty/)
  t.match(r.err, /values\.schema\.json: spec\.extra\.type: must not be empty/)
  t.match(r.err, /values\.schema\.json: spec\.uniq: uniqueItems: true is not allowed/)
  t.match(r.err, /values\.schema\.json: spec\.ref: keyword "\$ref" is not allowed/)
  t.match(r.err, /every instance: templates\/bad\.ejs: Secret\/lint: kind v1 Secret is not one the operator manages/, 'once, naming the template')
  const broken = await run(['lint', '--chart', chartWith({ 'templates/bad.ejs': '<% if ( %>' })])
  t.equal(broken.code, 1)
  t.match(broken.err, /templates\/bad\.ejs:1: /)
})

t.test('lint checks the declared kinds: namespaced, under their resource; a kind not built in is left to the operator', async (t) => {
  const kinds = readFileSync(join(root, 'charts/memcached/kinds.yaml'), 'utf8')
  const n = (YAML.parse(kinds) as { kinds: unknown[] }).kinds.length
  const extra = (entries: string) => chartWith({ 'kinds.yaml': `${kinds}${entries}` })
  const bad = await run(['lint', '--chart', extra('  - {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, resource: clusterroles}\n  - {apiVersion: coordination.k8s.io/v1, kind: Lease, resource: lease}\n  - {apiVersion: apps/v1, kind: ReplicaSet, resource: replicaset}\n  - {apiVersion: apps/v1, kind: Revision, resource: controllerrevisions}\n')])
  t.equal(bad.code, 1)
  t.match(bad.err, `kinds.yaml: kinds[${n}] (rbac.authorization.k8s.io/v1 ClusterRole): cluster-scoped; a chart may declare only namespaced kinds`)
  t.match(bad.err, `kinds.yaml: kinds[${n + 1}] (coordination.k8s.io/v1 Lease): resource is leases, not lease`)
  t.match(bad.err, `kinds.yaml: kinds[${n + 2}] (apps/v1 ReplicaSet): resource is replicasets, not replicaset`)
  t.match(bad.err, `kinds.yaml: kinds[${n + 3}] (apps/v1 Revision): resource controllerrevisions is of kind ControllerRevision`)
  const crd = await run(['lint', '--chart', extra('  - {apiVersion: monitoring.coreos.com/v1, kind: PodMonitor, resource: podmonitors, optional: true}\n')])
  t.equal(crd.code, 0, crd.err)
  t.match(crd.err, /^lint: note: kinds\.yaml: monitoring\.coreos\.com\/v1 PodMonitor is not a built-in kind: the operator checks through discovery when it starts that the cluster serves it namespaced$/m, 'a note, on stderr')
  t.equal(crd.out.split('\n').filter(Boolean).length, 1, 'stdout is the one line of the result')
  t.match(crd.out, `ok (11 templates, ${n + 1} kinds, `)
})

t.test('lint renders the CRs given with -f, and reports those that fail', async (t) => {
  const bad = file('lint-bad.yaml', 'apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: x}\nspec: {size: 1, port: 0}\n')
  const r = await run(['lint', '-f', bad])
  t.equal(r.code, 1)
  t.match(r.err, /lint-bad\.yaml \(x\): spec\.port: must be >= 1/)
  const notCr = await run(['lint', '-f', file('lint-notcr.yaml', 'kind: x\n')])
  t.match(notCr.err, /expected apiVersion/)
})

t.test('the committed CRD equals the output of crd', async (t) => {
  const r = await run(['crd'])
  t.equal(r.code, 0)
  t.equal(r.out, readFileSync(join(root, 'kustomize/crd/bases/cache.example.com_memcacheds.yaml'), 'utf8'), 'regenerate with: npx memcached-operator crd > kustomize/crd/bases/cache.example.com_memcacheds.yaml')
})

/** Relative imports of a module, recursively; bare imports collected separately. `dynamic` follows `import()` too. */
function importGraph(entry: string, dynamic = true): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>()
  const packages = new Set<string>()
  const visit = (path: string): void => {
    if (files.has(path)) return
    files.add(path)
    const src = readFileSync(path, 'utf8')
    for (const m of src.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)) {
      if (m[2] !== undefined && !dynamic) continue
      const spec = m[1] ?? m[2] ?? ''
      if (spec.startsWith('.')) visit(resolve(dirname(path), spec))
      else packages.add(spec)
    }
  }
  visit(entry)
  return { files, packages }
}

t.test('render never loads @kubernetes/client-node', async (t) => {
  const graph = importGraph(join(root, 'operator/cli/render.ts'))
  t.ok(graph.packages.has('yaml') && graph.packages.has('ejs'), 'the graph is followed')
  t.notOk([...graph.packages].some((p) => p.startsWith('@kubernetes/')), [...graph.packages].join(', '))
  const main = importGraph(join(root, 'operator/cli/program.ts'), false)
  t.ok(main.packages.has('commander'), 'the graph is followed')
  t.notOk([...main.packages].some((p) => p.startsWith('@kubernetes/')), 'nor does the command line before a command runs')
  const run = importGraph(join(root, 'operator/cli/run.ts'))
  t.ok([...run.packages].some((p) => p.startsWith('@kubernetes/')), 'while run does load it (the check can fail)')
})

t.test('the executable: exit codes and stdin through a real process', async (t) => {
  const bin = join(root, 'operator/cli/main.js')
  const ok = spawnSync(process.execPath, [bin, 'render', '-f', '-'], { input: readFileSync(sample), encoding: 'utf8' })
  t.equal(ok.status, 0, ok.stderr)
  t.equal(docs(ok.stdout).length, 3)
  const invalid = spawnSync(process.execPath, [bin, 'render', '-f', '-'], { input: 'apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: a}\nspec: {size: -1}\n', encoding: 'utf8' })
  t.equal(invalid.status, 1)
  t.match(invalid.stderr, /spec\.size: must be >= 0/)
  t.equal(invalid.stdout, '')
  const usage = spawnSync(process.execPath, [bin, 'render', '--nope'], { encoding: 'utf8' })
  t.equal(usage.status, 2)
  // The reader goes away before the output is written (`render … | head -0`): no stack trace.
  const child = spawn(process.execPath, [bin, 'render', '-f', sample], { stdio: ['ignore', 'pipe', 'pipe'] })
  child.stdout.destroy()
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => (stderr += d))
  const [code] = (await once(child, 'close')) as [number | null]
  t.equal(code, 141, 'the status of a command killed by SIGPIPE, as helm and kubectl are')
  t.equal(stderr, '', 'and no stack trace')
  const shebang = readFileSync(bin, 'utf8').split('\n')[0]!.replace(/^#!\/usr\/bin\/env -S node\s*/, '')
  t.match(readFileSync(join(root, 'operator/cli/memcached-operator'), 'utf8'), `\nexec node ${shebang} "$cli/main.js" "$@"\n`, 'the executable runs main.js with the flags of its shebang')
  const viaNpx = execFileSync('npx', ['--no-install', 'memcached-operator', '--version'], { cwd: root, encoding: 'utf8', env: withoutTapHooks(process.env) })
  t.match(viaNpx.trim(), /^\d+\.\d+\.\d+$/, 'npx memcached-operator works from the checkout')
})

t.test('render --platform openshift renders as the operator does on OpenShift: no fixed UID or GID', async (t) => {
  const podSc = (out: string) => docs(out).find((d) => d.kind === 'Deployment').spec.template.spec.securityContext
  const plain = await run(['render', '-f', sample])
  t.match(podSc(plain.out), { runAsUser: 11211, runAsGroup: 11211 })
  const shift = await run(['render', '-f', sample, '--platform', 'openshift'])
  t.equal(shift.code, 0, shift.err)
  t.same(podSc(shift.out), { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } })
  const bad = await run(['render', '-f', sample, '--platform', 'openshift4'])
  t.equal(bad.code, 2)
  t.match(bad.err, /--platform.*openshift4/)
})

t.test('lint renders each platform’s values: a platform file the schema refuses is a problem named by its platform', async (t) => {
  const dir = chartWith({ 'platforms/openshift.yaml': 'podSecurityContext:\n  runAsUser: 0\n' })
  const r = await run(['lint', '--chart', dir])
  t.equal(r.code, 1)
  t.match(r.err, /minimal values on platform openshift \(size 3\): platforms\/openshift\.yaml: podSecurityContext\.runAsUser: must be >= 1 \(got 0\) \(a value of the chart on this platform: neither the spec nor an override sets podSecurityContext\)/)
})
