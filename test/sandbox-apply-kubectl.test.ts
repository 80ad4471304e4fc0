import t from 'tap'
import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { startSandbox } from '../operator/sandbox/index.ts'
import { kubectlPath } from './support/tools.ts'
import { memcachedCRD } from './sandbox-crd-fixture.ts'
import { tempDir } from './support/tmp.ts'

const manifest = JSON.stringify({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'cache', namespace: 'default', labels: { app: 'cache', tier: 'memory' } },
  spec: {
    replicas: 2,
    selector: { matchLabels: { app: 'cache' } },
    template: { metadata: { labels: { app: 'cache' } }, spec: { containers: [{ name: 'memcached', image: 'memcached:1.6.38' }] } },
  },
})

t.test('kubectl client-side apply, then server-side apply of the same manifest: labels survive the migration', async (t) => {
  const sb = await startSandbox({ controllers: false })
  t.teardown(() => sb.close())
  const kubectl = async (args: string[], input?: string): Promise<string> => {
    const run = promisify(execFile)(kubectlPath(), ['--kubeconfig', sb.kubeconfigPath, ...args], { timeout: 60_000 })
    if (input !== undefined) run.child.stdin?.end(input)
    return (await run).stdout
  }
  await kubectl(['apply', '-f', '-'], manifest)
  await kubectl(['apply', '--server-side', '-f', '-'], manifest)
  const d = JSON.parse(await kubectl(['get', 'deployment/cache', '-o', 'json', '--show-managed-fields'])) as {
    metadata: { labels?: Record<string, string>; managedFields?: { manager: string; operation: string; fieldsV1: Record<string, unknown> }[] }
    spec: { selector: unknown; template: { metadata: { labels?: Record<string, string> } } }
  }
  t.same(d.metadata.labels, { app: 'cache', tier: 'memory' })
  t.same(d.spec.selector, { matchLabels: { app: 'cache' } })
  t.same(d.spec.template.metadata.labels, { app: 'cache' })
  const applier = d.metadata.managedFields?.find((e) => e.manager === 'kubectl' && e.operation === 'Apply')
  t.same(applier?.fieldsV1['f:metadata'], { 'f:labels': { 'f:app': {}, 'f:tier': {} } }, 'the applier owns the applied labels, not the map')
  t.notOk(d.metadata.managedFields?.some((e) => e.manager === 'kubectl-client-side-apply'), 'the client-side apply entry was migrated away')
  t.match(await kubectl(['apply', '--server-side', '-f', '-'], manifest), /serverside-applied/, 'a second server-side apply still works')
})

t.test('kubectl diff after kubectl apply --server-side of the same file exits 0: its empty annotations patch stores nothing', async (t) => {
  const sb = await startSandbox({ controllers: false, installCRDs: [memcachedCRD()] })
  t.teardown(() => sb.close())
  const run = async (args: string[], input: string): Promise<{ code: number; out: string }> => {
    const p = promisify(execFile)(kubectlPath(), ['--kubeconfig', sb.kubeconfigPath, ...args], { timeout: 60_000 })
    p.child.stdin?.end(input)
    try {
      const r = await p
      return { code: 0, out: r.stdout }
    } catch (e) {
      const err = e as { code?: number; stdout?: string; stderr?: string }
      return { code: err.code ?? -1, out: `${err.stdout ?? ''}${err.stderr ?? ''}` }
    }
  }
  const cr = JSON.stringify({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'm', namespace: 'default' }, spec: { size: 1 } })
  for (const [what, file] of [['a custom resource (merge patch)', cr], ['a Deployment (strategic merge patch)', manifest]] as const) {
    t.equal((await run(['apply', '--server-side', '-f', '-'], file)).code, 0, `${what}: applied`)
    const diff = await run(['diff', '-f', '-'], file)
    t.equal(diff.code, 0, `${what}: no difference`)
    t.equal(diff.out, '', what)
  }
  // The same patches for real: the object is unchanged, so nothing is stored.
  t.equal((await run(['patch', 'memcached/m', '--type', 'merge', '-p', '{"metadata":{"annotations":{},"labels":{}}}'], '')).code, 0)
  t.equal((await run(['patch', 'deployment/cache', '-p', '{"metadata":{"annotations":{}}}'], '')).code, 0)
  const d = JSON.parse((await run(['get', 'deployment/cache', 'memcached/m', '-o', 'json'], '')).out) as { items: { metadata: Record<string, unknown> }[] }
  t.same(d.items.map((o) => ['annotations' in o.metadata, 'labels' in o.metadata]), [[false, true], [false, false]], 'no empty annotations or labels stored')
  t.equal((await run(['diff', '-f', '-'], cr)).code, 0, 'still no difference')
})

t.test('an applier drops a container in which kubectl edit added an env var: the container goes, no 500', async (t) => {
  const sb = await startSandbox({ controllers: false })
  t.teardown(() => sb.close())
  // kubectl edit with an "editor" that adds DEBUG=1 to the sidecar, as a user would in vi.
  const dir = tempDir('kubectl-edit-')
  const editor = join(dir, 'editor.mjs')
  writeFileSync(editor, [
    "import { readFileSync, writeFileSync } from 'node:fs'",
    'const f = process.argv[2]',
    "const text = readFileSync(f, 'utf8').replace(/^(\\s*)name: sidecar$/m, (line, indent) => `${line}\\n${indent}env:\\n${indent}- name: DEBUG\\n${indent}  value: \"1\"`)",
    'writeFileSync(f, text)',
  ].join('\n'))
  const run = async (args: string[], input?: string): Promise<string> => {
    const p = promisify(execFile)(kubectlPath(), ['--kubeconfig', sb.kubeconfigPath, ...args], { timeout: 60_000, env: { ...process.env, KUBE_EDITOR: `${process.execPath} ${editor}` } })
    if (input !== undefined) p.child.stdin?.end(input)
    return (await p).stdout
  }
  const withContainers = (containers: { name: string; image: string }[]): string => {
    const d = JSON.parse(manifest) as { spec: { template: { spec: { containers: unknown[] } } } }
    d.spec.template.spec.containers = containers
    return JSON.stringify(d)
  }
  await run(['apply', '--server-side', '--field-manager=op', '-f', '-'], withContainers([{ name: 'memcached', image: 'memcached:1.6.38' }, { name: 'sidecar', image: 'exporter:1' }]))
  await run(['edit', 'deployment/cache'])
  const edited = JSON.parse(await run(['get', 'deployment/cache', '-o', 'json'])) as { spec: { template: { spec: { containers: { name: string; env?: unknown }[] } } } }
  t.same(edited.spec.template.spec.containers[1]?.env, [{ name: 'DEBUG', value: '1' }], 'kubectl edit added the env var')
  t.match(await run(['apply', '--server-side', '--field-manager=op', '-f', '-'], withContainers([{ name: 'memcached', image: 'memcached:1.6.38' }])), /serverside-applied/)
  const after = JSON.parse(await run(['get', 'deployment/cache', '-o', 'json', '--show-managed-fields'])) as { spec: { template: { spec: { containers: { name: string }[] } } }; metadata: { managedFields: { manager: string }[] } }
  t.same(after.spec.template.spec.containers.map((c) => c.name), ['memcached'])
  t.notOk(after.metadata.managedFields.some((e) => e.manager === 'kubectl-edit'), 'kubectl-edit owned only what went with the sidecar')
})

t.test('kubectl patch of a PodDisruptionBudget selector replaces it (the field is `patchStrategy: replace` upstream)', async (t) => {
  const sb = await startSandbox({ controllers: false })
  t.teardown(() => sb.close())
  const run = async (args: string[], input?: string): Promise<string> => {
    const p = promisify(execFile)(kubectlPath(), ['--kubeconfig', sb.kubeconfigPath, ...args], { timeout: 60_000 })
    if (input !== undefined) p.child.stdin?.end(input)
    return (await p).stdout
  }
  const pdb = { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'cache', namespace: 'default' }, spec: { minAvailable: 1, selector: { matchLabels: { app: 'cache', tier: 'memory' } } } }
  await run(['create', '-f', '-'], JSON.stringify(pdb))
  await run(['patch', 'pdb/cache', '-p', '{"spec":{"selector":{"matchLabels":{"app":"store"}}}}'])
  const after = JSON.parse(await run(['get', 'pdb/cache', '-o', 'json'])) as { spec: { selector: unknown } }
  t.same(after.spec.selector, { matchLabels: { app: 'store' } })
})

t.test('kubectl apply --server-side keeps the null of a nullable field of a custom resource and drops a non-nullable one, as the API server does', async (t) => {
  const sb = await startSandbox({ controllers: false, installCRDs: [memcachedCRD()] })
  t.teardown(() => sb.close())
  const run = async (args: string[], input?: string): Promise<string> => {
    const p = promisify(execFile)(kubectlPath(), ['--kubeconfig', sb.kubeconfigPath, ...args], { timeout: 60_000 })
    if (input !== undefined) p.child.stdin?.end(input)
    return (await p).stdout
  }
  const cr = (spec: Record<string, unknown>) => JSON.stringify({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'm', namespace: 'default' }, spec })
  await run(['apply', '--server-side', '-f', '-'], cr({ size: 1, note: null, mode: null, extra: { kept: null } }))
  const got = JSON.parse(await run(['get', 'memcached/m', '-o', 'json'])) as { spec: Record<string, unknown> }
  t.same(got.spec, { size: 1, note: null, extra: { kept: null }, image: 'memcached:1.6', resources: { memory: '64Mi' } }, '`note` is nullable and `extra` preserves unknown fields: their nulls are stored; `mode` is not nullable')
  // A later apply that sets the field is a change of the stored null.
  await run(['apply', '--server-side', '-f', '-'], cr({ size: 1, note: 'n' }))
  t.equal((JSON.parse(await run(['get', 'memcached/m', '-o', 'json'])) as { spec: { note?: unknown } }).spec.note, 'n')
})
