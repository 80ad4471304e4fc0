/**
 * The kubeconfig that points real kubectl and @kubernetes/client-node at a sandbox: plain HTTP on
 * loopback, one cluster, context and user all named `sandbox`, a static bearer token (the sandbox
 * does not authenticate; the token only keeps clients from prompting for credentials).
 */
import { mkdtemp, writeFile, mkdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { stringify } from 'yaml'

/** The name of the cluster, context and user in the file. */
export const contextName = 'sandbox'

/** The kubeconfig document for a server URL. */
export function kubeconfigFor(url: string, namespace = 'default'): string {
  return stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      // client-node refuses plain http unless TLS verification is off; kubectl ignores the flag for http.
      clusters: [{ name: contextName, cluster: { server: url, 'insecure-skip-tls-verify': true } }],
      users: [{ name: contextName, user: { token: 'sandbox' } }],
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
export async function writeKubeconfig(url: string, path?: string): Promise<string> {
  const file = path ?? join(await mkdtemp(join(tmpdir(), 'sandbox-')), 'kubeconfig')
  await mkdir(dirname(file), { recursive: true })
  await writeFile(file, kubeconfigFor(url), { mode: 0o600 })
  return file
}
