/**
 * `diff` picks the namespace, context and CRs as `kubectl diff` does (the kubeconfig context's
 * namespace, `-n`, `--context`, `-l`), and says clearly why it cannot reach a cluster.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { runCli } from '../operator/cli/program.ts'
import { captureIO } from './support/io.ts'
import { eventually, startBed } from './support/operator.ts'
import { tempDir } from './support/tmp.ts'

const cr = (name: string, labels = '{}') => `apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: ${name}, labels: ${labels}}\nspec: {size: 1}\n`

t.test('diff: a CR without a namespace is compared in the context\'s namespace, or -n; --context picks the context; -l the CRs', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  await bed.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a' } })
  await bed.client.create({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'newone', namespace: 'team-a' }, spec: { size: 1 } })
  await eventually('applied', async () => ((await bed.client.list({ apiVersion: 'apps/v1', kind: 'Deployment' }, { namespace: 'team-a' })).items.length === 1 ? true : undefined))
  const dir = tempDir('mc-diff-ns-')
  const file = join(dir, 'new.yaml')
  writeFileSync(file, cr('newone'))
  // The sandbox's kubeconfig with its context's namespace set to team-a, and a second context in default.
  const base = readFileSync(bed.sandbox.kubeconfigPath, 'utf8')
  const ns = join(dir, 'ns.kc')
  writeFileSync(ns, base.replace('namespace: default', 'namespace: team-a').replace(/contexts:\n/, 'contexts:\n  - name: other\n    context: {cluster: sandbox, user: sandbox, namespace: default}\n'))

  const ctx = captureIO()
  t.equal(await runCli(['diff', '-f', file, '--kubeconfig', ns], ctx), 0, `the context's namespace, team-a: no difference (${ctx.err()})`)
  t.equal(ctx.out(), '')
  t.notMatch(ctx.err(), /not in the cluster/)

  const flag = captureIO()
  t.equal(await runCli(['diff', '-f', file, '--kubeconfig', ns, '-n', 'default'], flag), 1, '-n default: the CR is not there')
  t.match(flag.err(), /Memcached default\/newone is not in the cluster/)

  const other = captureIO()
  t.equal(await runCli(['diff', '-f', file, '--kubeconfig', ns, '--context', 'other'], other), 1, '--context other: its namespace, default')
  t.match(other.err(), /Memcached default\/newone is not in the cluster/)

  const mismatch = captureIO()
  writeFileSync(join(dir, 'a.yaml'), cr('newone').replace('name: newone', 'name: newone, namespace: team-a'))
  t.equal(await runCli(['diff', '-f', join(dir, 'a.yaml'), '--kubeconfig', ns, '-n', 'default'], mismatch), 2)
  t.match(mismatch.err(), /the namespace from the provided object "team-a" does not match the namespace "default"/)

  const badNs = captureIO()
  t.equal(await runCli(['diff', '-f', file, '--kubeconfig', ns, '-n', 'Bad_NS'], badNs), 2)
  t.match(badNs.err(), /--namespace "Bad_NS": a namespace must be a lowercase RFC 1123 label/)

  // -l: only the CRs the selector matches, from files and from the cluster.
  const two = join(dir, 'two.yaml')
  writeFileSync(two, `${cr('newone', '{tier: gold}')}---\n${cr('absent', '{tier: bronze}')}`)
  const gold = captureIO()
  t.equal(await runCli(['diff', '-f', two, '--kubeconfig', ns, '-l', 'tier=gold'], gold), 0, gold.err())
  t.notMatch(gold.err(), /absent/)
  const bronze = captureIO()
  t.equal(await runCli(['diff', '-f', two, '--kubeconfig', ns, '-l', 'tier in (bronze)'], bronze), 1)
  t.match(bronze.err(), /Memcached team-a\/absent is not in the cluster/)
  const all = captureIO()
  t.equal(await runCli(['diff', '--all', '--kubeconfig', ns, '-n', 'team-a', '-o', 'json', '--set', 'size=2'], all), 1, all.err())
  t.same((JSON.parse(all.out()) as { memcacheds: { memcached: string }[] }).memcacheds.map((m) => m.memcached), ['team-a/newone'], '--all -n: that namespace only')
  const none = captureIO()
  t.equal(await runCli(['diff', '--all', '--kubeconfig', ns, '-l', 'tier=gold', '--set', 'size=2'], none), 0, 'no CR in the cluster has the label')
  const badSel = captureIO()
  t.equal(await runCli(['diff', '--all', '--kubeconfig', ns, '-l', 'tier in ('], badSel), 2)
  t.match(badSel.err(), /--selector "tier in \(": /)
})

t.test('diff: a missing kubeconfig, a context that does not exist and refused credentials are said in one line, naming what', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  const dir = tempDir('mc-diff-kc-')
  const file = join(dir, 'cr.yaml')
  writeFileSync(file, cr('x'))
  const env = { HOME: process.env.HOME, KUBECONFIG: process.env.KUBECONFIG, KUBERNETES_SERVICE_HOST: process.env.KUBERNETES_SERVICE_HOST }
  t.teardown(() => {
    for (const [k, v] of Object.entries(env)) if (v === undefined) delete process.env[k]
    else process.env[k] = v
  })
  process.env.HOME = dir
  delete process.env.KUBECONFIG
  delete process.env.KUBERNETES_SERVICE_HOST
  const missing = captureIO()
  t.equal(await runCli(['diff', '-f', file], missing), 2)
  t.match(missing.err(), /^error: no kubeconfig found: no --kubeconfig, KUBECONFIG is not set, \S+\/\.kube\/config does not exist, and this is not a pod/)
  t.notMatch(missing.err(), /ECONNREFUSED|8080/)

  const base = readFileSync(bed.sandbox.kubeconfigPath, 'utf8')
  const nope = join(dir, 'nope.kc')
  writeFileSync(nope, base.replace('current-context: sandbox', 'current-context: nope'))
  const current = captureIO()
  t.equal(await runCli(['diff', '-f', file, '--kubeconfig', nope], current), 2)
  t.match(current.err(), /^error: kubeconfig \S+nope\.kc: context "nope" does not exist\n$/)
  const flag = captureIO()
  t.equal(await runCli(['diff', '-f', file, '--kubeconfig', bed.sandbox.kubeconfigPath, '--context', 'elsewhere'], flag), 2)
  t.match(flag.err(), /context "elsewhere" does not exist/)

  const garbage = join(dir, 'garbage.kc')
  writeFileSync(garbage, 'clusters: [\n  - {name: a\nusers: ]]\n')
  const bad = captureIO()
  t.equal(await runCli(['diff', '-f', file, '--kubeconfig', garbage], bad), 2)
  t.match(bad.err(), /^error: kubeconfig \S+garbage\.kc: .+\n$/, 'one line')

  const token = join(dir, 'token.kc')
  writeFileSync(token, base.replace(/token: \S+/, 'token: wrong'))
  const refused = captureIO()
  t.equal(await runCli(['diff', '-f', file, '--kubeconfig', token], refused), 2)
  t.match(refused.err(), /^error: (Memcached default\/x: )?the server refused the credentials of user "sandbox" at https:\/\/127\.0\.0\.1:\d+ \(context "sandbox"\): 401 /)
})

t.test('diff: a CR the server refuses to compare (its namespace does not exist) is named, and the others are still compared (exit 2)', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  const file = join(tempDir('mc-diff-fail-'), 'two.yaml')
  writeFileSync(file, `${cr('lost').replace('name: lost', 'name: lost, namespace: nowhere')}---\n${cr('fresh')}`)
  const io = captureIO()
  t.equal(await runCli(['diff', '-f', file, '--kubeconfig', bed.sandbox.kubeconfigPath], io), 2)
  t.match(io.err(), /^error: Memcached nowhere\/lost: .*namespaces? "nowhere" not found/m)
  t.match(io.out(), /\+\+\+ merged\/apps\.v1\.Deployment\.default\.fresh\n/, 'the other CR is still compared')
})
