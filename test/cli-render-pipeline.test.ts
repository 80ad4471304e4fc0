/**
 * `render` in CI pipelines: it refuses what lint and the operator refuse, passes other objects
 * through (kustomize build | render -f - | kubectl apply -f -), reads directories as kubectl does,
 * names the file of every problem, and gives up on a template that never ends.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import t from 'tap'
import { parseAllDocuments } from 'yaml'
import { runCli } from '../operator/cli/program.ts'
import { chartWith } from './support/chart.ts'
import { captureIO } from './support/io.ts'
import { tempDir } from './support/tmp.ts'

const root = resolve(import.meta.dirname, '..')
const sample = join(root, 'kustomize/samples/cache_v1alpha1_memcached.yaml')
const kinds = (yaml: string) => parseAllDocuments(yaml).map((d) => d.toJS() as { kind: string; metadata: { name: string; namespace?: string } }).filter(Boolean)

async function run(args: string[], stdin = '') {
  const io = captureIO(stdin)
  const code = await runCli(args, io)
  return { code, out: io.out(), err: io.err() }
}

t.test('render refuses a chart that declares a cluster-scoped kind, as lint and the operator do', async (t) => {
  const chart = chartWith({
    'kinds.yaml': `${readFileSync(join(root, 'charts/memcached/kinds.yaml'), 'utf8')}  - {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, resource: clusterroles}\n`,
    'templates/clusterrole.ejs': 'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: <%= fullname %>\nrules: []\n',
  })
  const r = await run(['render', '--chart', chart, '-f', sample])
  t.equal(r.code, 1)
  t.equal(r.out, '', 'no ClusterRole with a namespace stamped on it')
  t.match(r.err, /kinds\.yaml: kinds\[\d+\] \(rbac\.authorization\.k8s\.io\/v1 ClusterRole\): cluster-scoped/)
})

t.test('render -n takes only a valid namespace; a CR given twice is refused', async (t) => {
  const bad = await run(['render', '-f', sample, '-n', 'Bad_NS'])
  t.equal(bad.code, 2)
  t.match(bad.err, /--namespace "Bad_NS": a namespace must be a lowercase RFC 1123 label/)
  t.equal(bad.out, '')
  const twice = await run(['render', '-f', sample, '-f', sample])
  t.equal(twice.code, 1)
  t.equal(twice.out, '')
  t.match(twice.err, /cache_v1alpha1_memcached\.yaml: Memcached default\/memcached-sample: given twice \(first in \S+cache_v1alpha1_memcached\.yaml\)/)
  // Two CRs that render the same object, and an object passed through that a CR renders too.
  const clash = await run(['render', '-f', '-'], `${readFileSync(sample, 'utf8')}---\napiVersion: v1\nkind: Service\nmetadata: {name: memcached-sample, namespace: default}\nspec: {}\n`)
  t.equal(clash.code, 1)
  t.match(clash.err, /Service default\/memcached-sample: in the output twice \(memcached\/templates\/service\.ejs and <stdin>\)/)
})

t.test('objects that are not Memcacheds pass through unchanged, in place (kustomize build | render -f - | kubectl apply -f -)', async (t) => {
  const input = `apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n${readFileSync(sample, 'utf8')}---\napiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: default}\nstringData: {k: v}\n`
  const r = await run(['render', '-f', '-'], input)
  t.equal(r.code, 0, r.err)
  const docs = kinds(r.out)
  t.same(docs.map((d) => d.kind), ['Namespace', 'Service', 'Deployment', 'PodDisruptionBudget', 'Secret'])
  t.same(docs[0], { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'a' } }, 'unchanged: no namespace, no labels added')
  t.same(docs[4], { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'default' }, stringData: { k: 'v' } })
  const json = await run(['render', '-f', '-', '-o', 'json'], input)
  t.same((JSON.parse(json.out) as { items: { kind: string }[] }).items.map((i) => i.kind), ['Namespace', 'Service', 'Deployment', 'PodDisruptionBudget', 'Secret'])
  // A values file given to -f is not a manifest: said so, with the flag to use.
  const values = await run(['render', '-f', join(root, 'charts/memcached/values.yaml')])
  t.equal(values.code, 1)
  t.match(values.err, /values\.yaml: document 1: not a Kubernetes object: .*\(a values file is given with --values, not -f\)/)
  // A CR given to --values (the other habit) is said to be one; an empty input names its file.
  const crAsValues = await run(['render', '-f', sample, '--values', sample])
  t.equal(crAsValues.code, 1)
  t.match(crAsValues.err, /cache_v1alpha1_memcached\.yaml: a values file is a map of values, and this is a Kubernetes object \("Memcached"\): give it with -f/)
  const emptyFile = join(tempDir('mc-render-empty-'), 'empty.yaml')
  writeFileSync(emptyFile, '# nothing\n')
  const empty = await run(['render', '-f', emptyFile])
  t.equal(empty.code, 1)
  t.match(empty.err, /no Memcached resource in the input \(\S+empty\.yaml\)/)
  // A Memcached of another version is refused, not passed through.
  const other = await run(['render', '-f', '-'], 'apiVersion: cache.example.com/v1\nkind: Memcached\nmetadata: {name: x}\n')
  t.equal(other.code, 1)
  t.match(other.err, /expected apiVersion cache\.example\.com\/v1alpha1 and kind Memcached, got "cache\.example\.com\/v1" "Memcached"/)
})

t.test('render -f DIR reads its manifests (-R: and its subdirectories\'); file errors are words; value errors name the file', async (t) => {
  const dir = tempDir('mc-render-dir-')
  mkdirSync(join(dir, 'team', 'more'), { recursive: true })
  writeFileSync(join(dir, 'a.yaml'), 'apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: a}\nspec: {size: 1}\n')
  writeFileSync(join(dir, 'kustomization.yaml'), 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [a.yaml]\n')
  writeFileSync(join(dir, 'notes.txt'), 'not a manifest')
  writeFileSync(join(dir, 'team', 'more', 'b.yml'), 'apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: b, namespace: team}\nspec: {size: 1}\n')
  const flat = await run(['render', '-f', dir])
  t.equal(flat.code, 0, flat.err)
  t.same([...new Set(kinds(flat.out).map((d) => d.metadata.name))], ['a'], 'the directory\'s files only; kustomization.yaml and other extensions skipped')
  const deep = await run(['render', '-R', '-f', dir])
  t.equal(deep.code, 0, deep.err)
  t.same([...new Set(kinds(deep.out).map((d) => `${d.metadata.namespace}/${d.metadata.name}`))], ['default/a', 'team/b'])
  const empty = tempDir('mc-render-empty-')
  const none = await run(['render', '-f', empty])
  t.equal(none.code, 1)
  t.match(none.err, /a directory without \.json, \.yaml, \.yml files \(-R reads its subdirectories too\)/)
  const missing = await run(['render', '-f', join(dir, 'missing.yaml')])
  t.match(missing.err, /missing\.yaml: cannot read: no such file or directory \(ENOENT\)/)
  const notDir = await run(['render', '-f', join(dir, 'a.yaml', 'x')])
  t.match(notDir.err, /a\.yaml\/x: cannot read: a path component is not a directory \(ENOTDIR\)/)
  writeFileSync(join(dir, 'team', 'bad.yaml'), 'apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: bad}\nspec: {size: -1}\n')
  const bad = await run(['render', '-R', '-f', dir])
  t.equal(bad.code, 1)
  t.match(bad.err, /team\/bad\.yaml: Memcached default\/bad: spec\.size: must be >= 0/)
})

t.test('a template that never ends: render gives up after --timeout, naming the template', async (t) => {
  const chart = chartWith({ 'templates/configmap-loop.ejs': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n<% while (true) {} %>\n' })
  const r = await run(['render', '--chart', chart, '-f', sample, '--timeout', '500ms'])
  t.equal(r.code, 1)
  t.equal(r.out, '')
  t.match(r.err, /^error: memcached\/templates\/configmap-loop\.ejs: did not finish within 0\.5 s \(a template that loops forever\?\)\n$/)
  // And the next render in the same process works.
  const ok = await run(['render', '-f', sample])
  t.equal(ok.code, 0, ok.err)
  const badTimeout = await run(['render', '-f', sample, '--timeout', 'soon'])
  t.equal(badTimeout.code, 2)
})
