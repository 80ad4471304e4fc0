/**
 * Secret inputs in the CLI: `render` (offline) writes placeholders and names on stderr the Secrets
 * whose checksums it could not compute; `diff` reads each referenced Secret with a GET, so that it
 * shows what a rotation changes, and reports a Secret the operator could not use.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import YAML from 'yaml'
import { memcachedCRD } from '../operator/api/crd.ts'
import { runCli } from '../operator/cli/program.ts'
import type { KubeObject } from '../operator/controller/client.ts'
import { loadChart } from '../operator/render/chart.ts'
import { OFFLINE_CHECKSUM, secretChecksum } from '../operator/render/secrets.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import { captureIO } from './support/io.ts'
import { clientFor, eventually, startOperatorOn } from './support/operator.ts'
import { tempDir } from './support/tmp.ts'

const chartDir = join(import.meta.dirname, 'fixtures', 'secret-input-chart')
const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
const crText = (name: string, spec: Record<string, unknown>, namespace?: string) => YAML.stringify({ ...MC, metadata: { name, ...(namespace ? { namespace } : {}) }, spec })
const writeCrs = (...docs: string[]) => {
  const file = join(tempDir('mc-secrets-'), 'crs.yaml')
  writeFileSync(file, docs.join('---\n'))
  return file
}
const podAnnotations = (out: string) =>
  YAML.parseAllDocuments(out)
    .map((d) => d.toJS() as { kind: string; spec: { template: { metadata: { annotations?: Record<string, string> } } } })
    .filter((o) => o?.kind === 'Deployment')
    .map((o) => o.spec.template.metadata.annotations?.['checksum/secret'])

t.test('render offline: placeholders, and one line on stderr naming the Secrets not computed', async (t) => {
  const file = writeCrs(crText('a', { size: 1, secretName: 'a-tls' }), crText('b', { size: 1, secretName: 'b-auth' }, 'team'), crText('c', { size: 1 }))
  const io = captureIO()
  t.equal(await runCli(['render', '--chart', chartDir, '-f', file], io), 0, io.err())
  t.same(podAnnotations(io.out()), [OFFLINE_CHECKSUM, OFFLINE_CHECKSUM, undefined])
  t.equal(io.err(), "render: checksums of Secret(s) default/a-tls, team/b-auth not computed offline (no cluster); pods' checksum annotations are placeholders\n")
})

t.test('render offline of CRs that use no Secret says nothing on stderr', async (t) => {
  const io = captureIO()
  t.equal(await runCli(['render', '--chart', chartDir, '-f', writeCrs(crText('c', { size: 1 }))], io), 0)
  t.equal(io.err(), '')
})

t.test('diff reads the referenced Secrets: a rotation shows as a change of the pods\' checksum annotation', async (t) => {
  const chart = loadChart(chartDir)
  const sandbox = await startSandbox({ podReadyDelayMs: 20, installCRDs: [memcachedCRD(chart) as unknown as KubeObject] })
  t.teardown(() => sandbox.close())
  const client = clientFor(sandbox, 'test-user/1', 'test-user')
  t.teardown(() => client.close())
  const kc = ['--kubeconfig', sandbox.kubeconfigPath, '--chart', chartDir]
  const secretRef = { apiVersion: 'v1', kind: 'Secret', namespace: 'default', name: 'rot-auth' }
  await client.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'rot-auth', namespace: 'default', labels: { 'cache.example.com/memcached-input': 'true' } }, stringData: { password: 'one' } } as KubeObject)
  await client.create({ ...MC, metadata: { name: 'rot', namespace: 'default' }, spec: { size: 1, secretName: 'rot-auth' } })
  const operator = await startOperatorOn(sandbox, { chart })
  const ROTATED = 'rotated-Zk4qW8vB2n'
  const first = secretChecksum({ stringData: { password: 'one' } })
  await eventually('applied', async () => {
    const d = (await client.list({ apiVersion: 'apps/v1', kind: 'Deployment' }, { namespace: 'default' })).items[0]
    return (d?.spec as { template: { metadata: { annotations?: Record<string, string> } } } | undefined)?.template.metadata.annotations?.['checksum/secret'] === first ? true : undefined
  })
  // The operator stops: the rotation below is what diff must find.
  await operator.stop()
  const file = writeCrs(crText('rot', { size: 1, secretName: 'rot-auth' }, 'default'))

  sandbox.requests.reset()
  const none = captureIO()
  t.equal(await runCli(['diff', '-f', file, ...kc], none), 0, none.err())
  const gets = sandbox.requests.log().filter((r) => r.userAgent?.startsWith('memcached-operator-diff') && r.resource === 'secrets')
  t.same(gets.map((r) => `${r.verb} ${r.name}`), ['get rot-auth'], 'one GET of the referenced Secret')

  await client.patch(secretRef, { stringData: { password: ROTATED } }, { type: 'merge' })
  const rotated = captureIO()
  t.equal(await runCli(['diff', '-f', file, ...kc], rotated), 1, rotated.err())
  t.match(rotated.out(), `\n-        checksum/secret: "${first}"\n+        checksum/secret: "${secretChecksum({ stringData: { password: ROTATED } })}"\n`)
  for (const v of [ROTATED, Buffer.from(ROTATED).toString('base64')]) t.notOk(rotated.out().includes(v) || rotated.err().includes(v), 'the diff shows no content')

  const all = captureIO()
  t.equal(await runCli(['diff', '--all', ...kc], all), 1, all.err())
  t.equal(all.out(), rotated.out(), '--all reads the Secret too')

  await client.patch(secretRef, { metadata: { labels: { 'cache.example.com/memcached-input': null } } }, { type: 'merge' })
  const unlabelled = captureIO()
  t.equal(await runCli(['diff', '-f', file, ...kc], unlabelled), 2)
  t.equal(unlabelled.err(), 'error: Memcached default/rot: Secret default/rot-auth exists but lacks the label cache.example.com/memcached-input=true, without which the operator does not see it: kubectl label secret rot-auth -n default cache.example.com/memcached-input=true\n')

  await client.delete(secretRef)
  const missing = captureIO()
  t.equal(await runCli(['diff', '-f', file, ...kc], missing), 2)
  t.equal(missing.err(), 'error: Memcached default/rot: Secret default/rot-auth does not exist (the chart refers to it; create it with the label cache.example.com/memcached-input=true)\n')
})
