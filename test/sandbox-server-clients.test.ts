/**
 * Smoke tests of real clients against the sandbox through its kubeconfig:
 * @kubernetes/client-node (object API and watch) and kubectl 1.34.
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import * as k8s from '@kubernetes/client-node'
import { startSandbox } from '../operator/sandbox/index.ts'
import { decodeProtobuf } from '../operator/sandbox/protobuf.ts'
import { helmPath, kubectlPath } from './support/tools.ts'
import { recordingProxy } from './support/proxy.ts'
import { widgetCRDs } from './support/sandbox-requests.ts'

t.test('@kubernetes/client-node works with the kubeconfig', async (t) => {
  const sb = await startSandbox({ controllers: false })
  t.teardown(() => sb.close())
  const kc = new k8s.KubeConfig()
  kc.loadFromFile(sb.kubeconfigPath)
  t.equal(kc.getCurrentContext(), 'sandbox')
  const api = k8s.KubernetesObjectApi.makeApiClient(kc)
  const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'client-node', namespace: 'default' }, data: { a: '1' } }
  const created = await api.create(cm)
  t.ok((created.metadata as { uid?: string }).uid)
  const applied = await api.patch({ ...cm, data: { a: '2' } }, undefined, undefined, 'smoke', true, k8s.PatchStrategy.ServerSideApply)
  t.same((applied as unknown as { data: Record<string, string> }).data, { a: '2' })
  const list = await api.list('v1', 'ConfigMap', 'default')
  t.same(list.items.map((i) => i.metadata?.name), ['client-node'])

  const events: string[] = []
  const watch = new k8s.Watch(kc)
  const done = new Promise<void>((resolve) => {
    void watch.watch('/api/v1/namespaces/default/configmaps', { resourceVersion: list.metadata?.resourceVersion ?? '0' }, (type) => {
      events.push(type)
      if (type === 'DELETED') resolve()
    }, () => resolve())
  })
  await new Promise((r) => setTimeout(r, 50))
  await api.delete(cm)
  await done
  t.same(events, ['DELETED'])
  await t.rejects(api.read(cm), /404|not found/)
})

function kubectl(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(kubectlPath(), args, { env }, (err, stdout, stderr) => {
      const code = err && typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : err ? 1 : 0
      resolve({ code, stdout, stderr })
    })
  })
}

t.test('kubectl 1.34: server-side apply, client-side apply, get, scale, delete', async (t) => {
  const sb = await startSandbox({ controllers: false, installCRDs: widgetCRDs() })
  t.teardown(() => sb.close())
  const dir = t.testdir({})
  const env = { ...process.env, KUBECONFIG: sb.kubeconfigPath, KUBECACHEDIR: join(dir, 'cache'), HOME: dir }
  const deploy = join(dir, 'deploy.yaml')
  const manifest = (image: string) =>
    `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: app\n        image: ${image}\n        ports: [{containerPort: 11211}]\n`
  await writeFile(deploy, manifest('memcached:1.6'))

  const ssa = await kubectl(['apply', '--server-side', '-f', deploy], env)
  t.equal(ssa.code, 0, ssa.stderr)
  t.match(ssa.stdout, 'deployment.apps/web serverside-applied')
  const live = JSON.parse((await kubectl(['get', 'deployment', 'web', '-o', 'json', '--show-managed-fields'], env)).stdout)
  t.equal(live.metadata.managedFields[0].manager, 'kubectl')
  t.equal(live.spec.template.spec.containers[0].ports[0].protocol, 'TCP')

  const svc = join(dir, 'svc.yaml')
  await writeFile(svc, 'apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector: {app: web}\n  ports: [{port: 80}]\n')
  const csa1 = await kubectl(['apply', '-f', svc], env)
  t.equal(csa1.code, 0, csa1.stderr)
  t.match(csa1.stdout, 'service/web created')
  await writeFile(svc, 'apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  labels: {tier: cache}\nspec:\n  selector: {app: web}\n  ports: [{port: 11211}]\n')
  const csa2 = await kubectl(['apply', '-f', svc], env)
  t.equal(csa2.code, 0, csa2.stderr)
  t.match(csa2.stdout, 'service/web configured')
  const s = JSON.parse((await kubectl(['get', 'service', 'web', '-o', 'json'], env)).stdout)
  t.same(s.spec.ports.map((p: { port: number }) => p.port), [11211])
  t.equal(s.metadata.labels.tier, 'cache')
  t.match(s.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration'], '"port":11211')

  const scale = await kubectl(['scale', 'deployment/web', '--replicas=3'], env)
  t.equal(scale.code, 0, scale.stderr)
  t.equal(JSON.parse((await kubectl(['get', 'deployment', 'web', '-o', 'json'], env)).stdout).spec.replicas, 3)

  const w = join(dir, 'widget.yaml')
  await writeFile(w, 'apiVersion: test.example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 4\n')
  t.equal((await kubectl(['apply', '-f', w], env)).code, 0)
  const table = await kubectl(['get', 'widgets'], env)
  t.match(table.stdout, /NAME\s+SIZE\s*\nw1\s+4/)
  await writeFile(w, 'apiVersion: test.example.com/v1\nkind: Widget\nmetadata:\n  name: w2\nspec:\n  size: -1\n')
  const invalid = await kubectl(['apply', '--server-side', '-f', w], env)
  t.not(invalid.code, 0)
  t.match(invalid.stderr, 'The Widget "w2" is invalid: spec.size: Invalid value: -1: spec.size in body should be greater than or equal to 0')

  const del = await kubectl(['delete', 'deployment', 'web'], env)
  t.equal(del.code, 0, del.stderr)
  t.match(del.stdout, 'deployment.apps "web" deleted')
  const gone = await kubectl(['get', 'deployment', 'web'], env)
  t.match(gone.stderr, 'Error from server (NotFound): deployments.apps "web" not found')
})

t.test("kubectl's protobuf generators: the decoded body is exactly the object kubectl meant", async (t) => {
  const sb = await startSandbox({ controllers: false })
  t.teardown(() => sb.close())
  const dir = t.testdir({})
  // A recording proxy in front of the sandbox keeps the protobuf bodies.
  const bodies: Buffer[] = []
  const proxy = await recordingProxy(
    t,
    sb.url,
    (req, body) => {
      if (req.headers['content-type'] === 'application/vnd.kubernetes.protobuf') bodies.push(body)
    },
    'Bearer sandbox',
  )
  const kubeconfig = join(dir, 'kubeconfig')
  await writeFile(kubeconfig, (await readFile(sb.kubeconfigPath, 'utf8')).replace(sb.httpsUrl, proxy))
  const env = { ...process.env, KUBECONFIG: kubeconfig, KUBECACHEDIR: join(dir, 'cache'), HOME: dir }
  const commands = [
    ['create', 'namespace', 'pns'],
    ['create', 'configmap', 'pcm', '--from-literal=a=1', '--from-literal=b=2'],
    ['create', 'secret', 'generic', 'psec', '--from-literal=pw=x'],
    ['create', 'serviceaccount', 'psa'],
    ['create', 'service', 'clusterip', 'psvc', '--tcp=80:8080'],
    ['create', 'deployment', 'pdep', '--image=nginx:1.27', '--port=80', '--replicas=0'],
  ]
  for (const args of commands) {
    const meant = JSON.parse((await kubectl([...args, '--dry-run=client', '-o', 'json'], env)).stdout)
    const n = bodies.length
    const made = await kubectl(args, env)
    t.equal(made.code, 0, made.stderr)
    const sent = bodies[n]
    if (!sent) {
      t.fail(`no protobuf body for ${args.join(' ')}`)
      continue
    }
    t.same(decodeProtobuf(sent), meant, args.join(' '))
  }
  const pdep = (await sb.cluster.handle({ verb: 'get', group: 'apps', version: 'v1', resource: 'deployments', namespace: 'default', name: 'pdep', query: new URLSearchParams() })).body as { spec: { replicas: number } }
  t.equal(pdep.spec.replicas, 0, 'a pointer field at its zero value is kept')
})

t.test('helm 4 installs, upgrades and uninstalls a release (its typed client deletes with protobuf DeleteOptions)', async (t) => {
  const sb = await startSandbox({ controllers: false })
  t.teardown(() => sb.close())
  const dir = t.testdir({
    chart: {
      'Chart.yaml': 'apiVersion: v2\nname: tiny\nversion: 0.1.0\n',
      'values.yaml': 'greeting: hello\n',
      templates: { 'cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\ndata:\n  greeting: {{ .Values.greeting | quote }}\n' },
    },
  })
  const env = { ...process.env, KUBECONFIG: sb.kubeconfigPath, HOME: dir, HELM_CACHE_HOME: join(dir, 'cache'), HELM_CONFIG_HOME: join(dir, 'config'), HELM_DATA_HOME: join(dir, 'data') }
  const helm = (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      execFile(helmPath(), args, { env }, (err, stdout, stderr) => resolve({ code: err ? 1 : 0, stdout, stderr }))
    })
  const cm = async (): Promise<{ status: number; body: unknown }> => sb.cluster.handle({ verb: 'get', group: '', version: 'v1', resource: 'configmaps', namespace: 'default', name: 'r-cm', query: new URLSearchParams() })
  const install = await helm(['install', 'r', join(dir, 'chart')])
  t.equal(install.code, 0, install.stderr)
  t.same(((await cm()).body as { data: object }).data, { greeting: 'hello' })
  const upgrade = await helm(['upgrade', 'r', join(dir, 'chart'), '--set', 'greeting=bye'])
  t.equal(upgrade.code, 0, upgrade.stderr)
  t.same(((await cm()).body as { data: object }).data, { greeting: 'bye' })
  const uninstall = await helm(['uninstall', 'r'])
  t.equal(uninstall.code, 0, uninstall.stderr)
  t.equal((await cm()).status, 404)
  const secrets = (await sb.cluster.handle({ verb: 'list', group: '', version: 'v1', resource: 'secrets', namespace: 'default', query: new URLSearchParams() })).body as { items: unknown[] }
  t.same(secrets.items, [], 'the release records are gone')
})
