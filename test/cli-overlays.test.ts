/**
 * Overlays on the command line: `render` and `diff` apply the platform's overlays file
 * (`--overlays`) and say which patch changed what (`--show-overlays`, `diff -o json`); a bad file
 * is a usage error naming every problem, for `run` before any request.
 */
import { cpSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import t from 'tap'
import YAML from 'yaml'
import { runCli } from '../operator/cli/program.ts'
import { startBed } from './support/operator.ts'
import { captureIO } from './support/io.ts'
import { tempDir } from './support/tmp.ts'

const root = resolve(import.meta.dirname, '..')
const sample = join(root, 'kustomize/samples/cache_v1alpha1_memcached.yaml')
const overlaysSample = join(root, 'kustomize/samples/cache_v1alpha1_memcached_overlays.yaml')
const platform = join(root, 'kustomize/manager/platform-overlays.yaml')

async function run(args: string[], stdin = '') {
  const io = captureIO(stdin)
  const code = await runCli(args, io)
  return { code, out: io.out(), err: io.err() }
}

t.test('render applies the platform\'s overlays before the CR\'s and shows what each changed', async (t) => {
  const r = await run(['render', '-f', overlaysSample, '--overlays', platform, '--show-overlays'])
  t.equal(r.code, 0, r.err)
  t.match(r.out, /registry\.example\.com\/mirror\/memcached:1\.6\.38-alpine/)
  t.match(r.out, /node-role\.kubernetes\.io\/edge/)
  t.notMatch(r.out, /cloud\.example\.com\/spot/, 'the CR\'s tolerations replace the platform\'s, as in a strategic merge')
  t.equal(r.err.split('\n').filter(Boolean).length, 3)
  t.match(r.err, /^render: Memcached default\/memcached-overlays: \S*kustomize\/manager\/platform-overlays\.yaml: overlays\[0\] \(spot-nodes\): Deployment\/memcached-overlays: spec\.template\.spec\.tolerations$/m)
  t.match(r.err, /spec\.overlays\[1\] \(registry-mirror\): Deployment\/memcached-overlays: spec\.template\.spec\.containers\[name=memcached\]\.image$/m)
  const plain = await run(['render', '-f', sample, '--show-overlays'])
  t.equal(plain.err, 'render: no overlay changed anything\n')
})

t.test('a bad overlays file is a usage error naming the file and every problem', async (t) => {
  const dir = tempDir('mc-overlays-file-')
  const bad = join(dir, 'bad.yaml')
  writeFileSync(bad, 'overlays:\n  - target: {kind: Deployment}\n  - memcachedSelector: "a b c"\n    target: {kind: Deployment}\n    jsonPatch: [{op: remove, path: /x}]\n')
  const r = await run(['render', '-f', sample, '--overlays', bad])
  t.equal(r.code, 2)
  t.match(r.err, /--overlays .*bad\.yaml:\n {2}- .*bad\.yaml: overlays\[1\]\.memcachedSelector: "a b c": not a label requirement/)
  t.match(r.err, /bad\.yaml: overlays\[0\]: exactly one of strategicMerge and jsonPatch is required/)
  const missing = await run(['render', '-f', sample, '--overlays', join(dir, 'none.yaml')])
  t.equal(missing.code, 2)
  t.match(missing.err, /--overlays .*none\.yaml: cannot read it: ENOENT/)
  const started = await run(['run', '--overlays', bad, '--kubeconfig', join(dir, 'no-kubeconfig')])
  t.equal(started.code, 2)
  t.match(started.err, /--overlays .*bad\.yaml:/, 'run stops before reading its kubeconfig')
})

t.test('diff lists each overlay\'s changes in its JSON, and on stderr with --show-overlays', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  const kc = ['--kubeconfig', bed.sandbox.kubeconfigPath]
  const json = await run(['diff', '-f', overlaysSample, '-o', 'json', ...kc])
  t.equal(json.code, 1, json.err)
  const plan = JSON.parse(json.out) as { memcacheds: { overlays?: { overlay: string; object: string; paths: string[] }[] }[] }
  t.same(plan.memcacheds[0]?.overlays?.map((o) => [o.overlay, o.object]), [['spec.overlays[0] (edge-nodes)', 'Deployment/memcached-overlays'], ['spec.overlays[1] (registry-mirror)', 'Deployment/memcached-overlays']])
  const shown = await run(['diff', '-f', sample, '--overlays', platform, '--show-overlays', ...kc])
  t.equal(shown.code, 1)
  t.match(shown.err, /Memcached default\/memcached-sample: .*platform-overlays\.yaml: overlays\[0\] \(spot-nodes\): Deployment\/memcached-sample: spec\.template\.spec\.tolerations/)
  t.match(shown.out, /cloud\.example\.com\/spot/)
})

t.test('diff --all with a new chart reports the CRs whose overlays it would break, before it is rolled out', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  const cr = YAML.parse(readFileSync(overlaysSample, 'utf8')) as { metadata: Record<string, unknown> }
  await bed.client.create({ ...cr, metadata: { ...cr.metadata, namespace: 'default' } } as never)
  const dir = tempDir('mc-overlays-chart-')
  cpSync(join(root, 'charts/memcached'), dir, { recursive: true })
  // The new revision renames the container the JSON patch tests.
  for (const f of ['templates/_pod.ejs']) writeFileSync(join(dir, f), readFileSync(join(dir, f), 'utf8').replace('    - name: memcached\n', '    - name: cache\n'))
  const r = await run(['diff', '--all', '--chart', dir, '--kubeconfig', bed.sandbox.kubeconfigPath])
  t.equal(r.code, 2, r.err)
  t.match(r.err, /error: Memcached default\/memcached-overlays: .*spec\.overlays\[1\] \(registry-mirror\): target Deployment\/memcached-overlays: jsonPatch\[0\] \(test \/spec\/template\/spec\/containers\/0\/name\): the test failed/s)
})
