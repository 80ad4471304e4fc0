/**
 * The kubeconfig that points real kubectl and @kubernetes/client-node at a sandbox: HTTPS on
 * loopback with the sandbox's certificate as CA (kubectl sends tokens only over TLS), one
 * cluster, context and user all named `sandbox`, and a bearer token: `sandbox` (the
 * cluster-admin of the sandbox) unless another identity's token is given.
 */
import { mkdtemp, writeFile, mkdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { stringify } from 'yaml'
import { sandboxCert } from './tls.ts'

/** The name of the cluster, context and user in the file. */
export const contextName = 'sandbox'

/** The kubeconfig document for a server URL and a bearer token. */
export function kubeconfigFor(url: string, namespace = 'default', token = 'sandbox'): string {
  return stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: contextName, cluster: { server: url, 'certificate-authority-data': Buffer.from(sandboxCert).toString('base64') } }],
      users: [{ name: contextName, user: { token } }],
      contexts: [{ name: contextName, context: { cluster: contextName, user: contextName, namespace } }],
      'current-context': contextName,
      preferences: {},
    },
    { lineWidth: 0 },
  )
}

/**
 * Writes the kubeconfig to `path`, or to a fresh temporary directory when no path is given.
 * @returns the file's path
 */
export async function writeKubeconfig(url: string, path?: string, token?: string): Promise<string> {
  const file = path ?? join(await mkdtemp(join(tmpdir(), 'sandbox-')), 'kubeconfig')
  await mkdir(dirname(file), { recursive: true })
  await writeFile(file, kubeconfigFor(url, 'default', token), { mode: 0o600 })
  return file
}
