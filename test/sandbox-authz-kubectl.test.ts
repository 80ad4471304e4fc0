/**
 * Real kubectl against the sandbox's authentication and authorization: `auth can-i` (with `--as`
 * and `--list`), `auth whoami`, `create token`, a 403 as kubectl prints it, RBAC objects in
 * `kubectl get` tables and their validation.
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import t from 'tap'
import { startSandbox } from '../operator/sandbox/index.ts'
import { kubectlPath } from './support/tools.ts'

const run = async (kubeconfig: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> => {
  try {
    const r = await promisify(execFile)(kubectlPath(), ['--kubeconfig', kubeconfig, ...args], { encoding: 'utf8' })
    return { code: 0, stdout: r.stdout, stderr: r.stderr }
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string }
    return { code: err.code, stdout: err.stdout, stderr: err.stderr }
  }
}

const sb = await startSandbox({ controllers: false })
t.teardown(() => sb.close())
const kubectl = (...args: string[]) => run(sb.kubeconfigPath, ...args)
for (const args of [['create', 'serviceaccount', 'bot'], ['create', 'rolebinding', 'bot-view', '--clusterrole=view', '--serviceaccount=default:bot']]) {
  const out = await kubectl(...args)
  if (out.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${out.stderr}`)
}

t.test('kubectl auth can-i answers yes or no with exit code 0 or 1, also --as a ServiceAccount', async (t) => {
  t.same(await kubectl('auth', 'can-i', 'delete', 'secrets', '-A'), { code: 0, stdout: 'yes\n', stderr: '' })
  const sa = 'system:serviceaccount:default:bot'
  t.match(await kubectl('auth', 'can-i', 'list', 'deployments', '--as', sa), { code: 0, stdout: 'yes\n' })
  t.match(await kubectl('auth', 'can-i', 'create', 'deployments', '--as', sa), { code: 1, stdout: 'no\n' })
  t.match(await kubectl('auth', 'can-i', 'list', 'deployments', '--as', sa, '-n', 'kube-system'), { code: 1, stdout: 'no\n' })
  t.match(await kubectl('auth', 'can-i', 'get', '/api', '--as', 'jane'), { code: 0, stdout: 'yes\n' })
})

t.test('kubectl auth can-i --list shows the rules of the bindings', async (t) => {
  const out = await kubectl('auth', 'can-i', '--list', '--as', 'system:serviceaccount:default:bot')
  t.equal(out.code, 0, out.stderr)
  t.match(out.stdout, /^Resources\s+Non-Resource URLs\s+Resource Names\s+Verbs\n/)
  t.match(out.stdout, /\ndeployments\.apps\s+\[\]\s+\[\]\s+\[get list watch\]\n/)
  t.match(out.stdout, /\n\s+\[\/version\]\s+\[\]\s+\[get\]\n/)
})

t.test('kubectl auth whoami names the user and its groups', async (t) => {
  const out = await kubectl('auth', 'whoami', '--as', 'jane', '--as-group', 'devs')
  t.equal(out.code, 0, out.stderr)
  t.match(out.stdout, /Username\s+jane\n/)
  t.match(out.stdout, /Groups\s+\[devs system:authenticated\]\n/)
})

t.test('kubectl create token prints a token that acts as the ServiceAccount', async (t) => {
  const created = await kubectl('create', 'token', 'bot', '--duration', '1h')
  t.equal(created.code, 0, created.stderr)
  const token = created.stdout.trim()
  t.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/, 'a JWT')
  t.match(await kubectl('--token', token, 'auth', 'whoami'), { code: 0, stdout: /Username\s+system:serviceaccount:default:bot\n/ })
  t.match(await kubectl('--token', token, 'get', 'deployments'), { code: 0, stderr: /No resources found/ })
})

t.test('a 403 as kubectl prints it', async (t) => {
  const out = await kubectl('create', 'configmap', 'x', '--as', 'system:serviceaccount:default:bot')
  t.equal(out.code, 1)
  t.equal(out.stderr, 'error: failed to create configmap: configmaps is forbidden: User "system:serviceaccount:default:bot" cannot create resource "configmaps" in API group "" in the namespace "default"\n')
  const get = await kubectl('get', 'secrets', '--as', 'jane')
  t.equal(get.stderr, 'Error from server (Forbidden): secrets is forbidden: User "jane" cannot list resource "secrets" in API group "" in the namespace "default"\n')
})

t.test('a kubeconfig written for an identity acts as it', async (t) => {
  const jane = await sb.kubeconfigFor({ user: 'jane', groups: ['devs'] })
  t.match(await run(jane, 'auth', 'whoami'), { code: 0, stdout: /Username\s+jane\n/ })
  t.match(await run(jane, 'get', 'pods'), { code: 1, stderr: /User "jane" cannot list resource "pods"/ })
})

t.test('kubectl get shows RBAC objects as a real server does', async (t) => {
  t.match((await kubectl('get', 'clusterroles')).stdout, /^NAME\s+CREATED AT\nadmin\s+\d{4}-\d\d-\d\dT/)
  const bindings = await kubectl('get', 'rolebindings', '-o', 'wide')
  t.match(bindings.stdout, /^NAME\s+ROLE\s+AGE\s+USERS\s+GROUPS\s+SERVICEACCOUNTS\nbot-view\s+ClusterRole\/view\s+\S+\s+default:bot\n/)
})

t.test('roleRef cannot change; kubectl reports the Invalid Status', async (t) => {
  const out = await kubectl('patch', 'rolebinding', 'bot-view', '--type=merge', '-p', '{"roleRef":{"name":"edit"}}')
  t.equal(out.code, 1)
  t.match(out.stderr, 'The RoleBinding "bot-view" is invalid: roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", Name:"edit"}: cannot change roleRef')
})

t.test('RBAC lists apply atomically: an applied rule list replaces the previous one', async (t) => {
  const doc = (verbs: string[]) => JSON.stringify({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'applied', namespace: 'default' }, rules: [{ apiGroups: [''], resources: ['pods'], verbs }] })
  const apply = (text: string) =>
    new Promise<number>((resolve) => {
      const p = execFile(kubectlPath(), ['--kubeconfig', sb.kubeconfigPath, 'apply', '--server-side', '-f', '-'], () => undefined)
      p.on('exit', (code) => resolve(code ?? 1))
      p.stdin?.end(text)
    })
  t.equal(await apply(doc(['get', 'list'])), 0)
  t.equal(await apply(doc(['watch'])), 0)
  t.equal((await kubectl('get', 'role', 'applied', '-o', 'jsonpath={.rules[*].verbs}')).stdout, '["watch"]')
})
