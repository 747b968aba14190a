// The VS Code face of trainmedic: starts `trainmedic lsp`, adds the three diagnose commands and shows
// the report in a webview. Everything runs locally; the panel loads no remote resource.

import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  ExecuteCommandRequest,
  LanguageClient,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import {
  makeNonce,
  parseDiagnosis,
  parseMessage,
  parseOpenPage,
  renderError,
  renderExplain,
  renderReport,
  tailText,
} from './report';

const COPY_VERIFY = 'trainmedic.copyVerify';
const OPEN_PAGE = 'trainmedic.openEncyclopedia';
const DIAGNOSE_TEXT = 'trainmedic.diagnoseText';
const DIAGNOSE_FILE = 'trainmedic.diagnoseFile';
const MAX_TERMINAL_CHARS = 4 * 1024 * 1024;

let client: LanguageClient | undefined;
let panel: vscode.WebviewPanel | undefined;
let output: vscode.OutputChannel | undefined;

function config(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration('trainmedic');
}

function workspaceRoot(): string | undefined {
  return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
}

/** `trainmedic` on PATH, an absolute path, or one relative to the workspace (`.venv/bin/trainmedic`). */
function serverCommand(): string {
  const raw = config().get<string>('serverPath', 'trainmedic').trim() || 'trainmedic';
  const root = workspaceRoot();
  const expanded = root ? raw.replace('${workspaceFolder}', root) : raw;
  if (root && !path.isAbsolute(expanded) && expanded.includes(path.sep)) {
    const candidate = path.join(root, expanded);
    if (fs.existsSync(candidate)) {
      return candidate;
    }
  }
  return expanded;
}

function initializationOptions(): Record<string, unknown> {
  const cfg = config();
  return { siteUrl: cfg.get<string>('siteUrl', ''), debounceMs: cfg.get<number>('debounceMs', 300) };
}

async function startClient(context: vscode.ExtensionContext): Promise<void> {
  output ??= vscode.window.createOutputChannel('trainmedic');
  const command = serverCommand();
  const args = ['lsp', ...config().get<string[]>('serverArgs', [])];
  const root = workspaceRoot();
  const serverOptions: ServerOptions = { command, args, ...(root ? { options: { cwd: root } } : {}) };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: 'file', pattern: '**/*.{log,out,err,txt}' },
      { scheme: 'file', pattern: '**/*.log.[0-9]*' },
      { language: 'log' },
      { scheme: 'file', language: 'plaintext' },
      { scheme: 'untitled', language: 'plaintext' },
    ],
    outputChannel: output,
    initializationOptions: initializationOptions(),
    synchronize: { configurationSection: 'trainmedic' },
    middleware: {
      // The server offers these commands to every editor; in VS Code they run here, where the
      // clipboard and the panels are.
      executeCommand: async (name, args, next) => {
        if (name === COPY_VERIFY) {
          const text = String(args[0] ?? '');
          await vscode.env.clipboard.writeText(text);
          void vscode.window.showInformationMessage(`trainmedic: copied \`${text}\``);
          return text;
        }
        if (name === OPEN_PAGE) {
          return openPage(String(args[0] ?? ''), async (id) => next(OPEN_PAGE, [id, { show: false }]));
        }
        return next(name, args);
      },
    },
  };
  client = new LanguageClient('trainmedic', 'trainmedic', serverOptions, clientOptions);
  try {
    await client.start();
  } catch (err: unknown) {
    const message = err instanceof Error ? err.message : String(err);
    client = undefined;
    const choice = await vscode.window.showErrorMessage(
      `trainmedic: could not start \`${command} lsp\` (${message}). Install it with ` +
        `\`pip install 'trainmedic[lsp]'\` or set trainmedic.serverPath.`,
      'Open settings',
    );
    if (choice === 'Open settings') {
      await vscode.commands.executeCommand('workbench.action.openSettings', 'trainmedic.serverPath');
    }
  }
  context.subscriptions.push({ dispose: () => void client?.stop() });
}

async function running(): Promise<LanguageClient> {
  if (client === undefined) {
    throw new Error('the trainmedic language server is not running; see the "trainmedic" output channel');
  }
  return client;
}

async function serverCommandCall(name: string, args: unknown[]): Promise<unknown> {
  const c = await running();
  return c.sendRequest(ExecuteCommandRequest.type, { command: name, arguments: args });
}

function showPanel(title: string, render: (nonce: string) => string): void {
  if (panel === undefined) {
    panel = vscode.window.createWebviewPanel('trainmedic.report', title, vscode.ViewColumn.Beside, {
      enableScripts: true,
      localResourceRoots: [],
      enableFindWidget: true,
    });
    panel.onDidDispose(() => {
      panel = undefined;
    });
    panel.webview.onDidReceiveMessage(async (raw: unknown) => {
      const message = parseMessage(raw);
      if (message?.type === 'copy') {
        await vscode.env.clipboard.writeText(message.text);
        void vscode.window.showInformationMessage(`trainmedic: copied \`${message.text}\``);
      } else if (message?.type === 'open') {
        await vscode.commands.executeCommand(OPEN_PAGE, message.id);
      }
    });
  }
  panel.title = title;
  panel.webview.html = render(makeNonce());
  panel.reveal(vscode.ViewColumn.Beside, true);
}

async function report(source: string, work: () => Promise<unknown>): Promise<void> {
  try {
    const raw = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `trainmedic: diagnosing ${source}…` },
      work,
    );
    const diagnosis = parseDiagnosis(raw);
    showPanel(`trainmedic: ${diagnosis.primary?.id ?? diagnosis.verdict}`, (nonce) =>
      renderReport(diagnosis, { source, nonce }),
    );
  } catch (err: unknown) {
    const message = err instanceof Error ? err.message : String(err);
    showPanel('trainmedic: error', (nonce) => renderError(message, nonce));
  }
}

async function openPage(id: string, fetchPage: (id: string) => Promise<unknown>): Promise<unknown> {
  const pageInfo = parseOpenPage(await fetchPage(id));
  if (pageInfo.url !== null) {
    await vscode.env.openExternal(vscode.Uri.parse(pageInfo.url));
  } else {
    showPanel(`trainmedic explain ${pageInfo.id}`, (nonce) => renderExplain(pageInfo.id, pageInfo.text, nonce));
  }
  return pageInfo;
}

/** The document's name matters: `rank3.log` tells the server the rank. */
function nameOf(doc: vscode.TextDocument): string {
  return doc.uri.scheme === 'file' ? doc.uri.fsPath : path.basename(doc.uri.path) || '<selection>';
}

async function diagnoseSelection(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (editor === undefined) {
    void vscode.window.showInformationMessage('trainmedic: select a traceback in an editor first.');
    return;
  }
  const text = editor.selections
    .filter((s) => !s.isEmpty)
    .map((s) => editor.document.getText(s))
    .join('\n');
  if (!text.trim()) {
    await diagnoseLog();
    return;
  }
  const name = nameOf(editor.document);
  await report(`the selection in ${path.basename(name)} (lines relative to the selection)`, () =>
    serverCommandCall(DIAGNOSE_TEXT, [text, name]),
  );
}

async function diagnoseLog(uri?: vscode.Uri): Promise<void> {
  let target = uri ?? vscode.window.activeTextEditor?.document.uri;
  if (target === undefined) {
    const picked = await vscode.window.showOpenDialog({ canSelectMany: false, openLabel: 'Diagnose' });
    target = picked?.[0];
    if (target === undefined) {
      return;
    }
  }
  const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === target?.toString());
  const label = path.basename(target.path);
  if (doc !== undefined && (doc.isDirty || doc.uri.scheme !== 'file')) {
    const text = doc.getText();
    await report(label, () => serverCommandCall(DIAGNOSE_TEXT, [text, nameOf(doc)]));
    return;
  }
  // Unmodified files are read by the server from disk; an open one also gets its diagnostics.
  const fileUri = target.toString();
  await report(label, () => serverCommandCall(DIAGNOSE_FILE, [fileUri]));
}

/** The active terminal's selection through the API when this VS Code has it, else its whole buffer
 * through the clipboard, which is restored afterwards. */
async function terminalText(terminal: vscode.Terminal): Promise<string> {
  const selection = (terminal as unknown as { selection?: unknown }).selection;
  if (typeof selection === 'string' && selection.trim()) {
    return selection;
  }
  const saved = await vscode.env.clipboard.readText();
  const marker = `trainmedic-${makeNonce()}`;
  try {
    await vscode.env.clipboard.writeText(marker);
    terminal.show(false);
    await vscode.commands.executeCommand('workbench.action.terminal.selectAll');
    await vscode.commands.executeCommand('workbench.action.terminal.copySelection');
    await vscode.commands.executeCommand('workbench.action.terminal.clearSelection');
    const copied = await vscode.env.clipboard.readText();
    return copied === marker ? '' : copied;
  } finally {
    await vscode.env.clipboard.writeText(saved);
  }
}

async function diagnoseTerminal(): Promise<void> {
  const terminal = vscode.window.activeTerminal;
  if (terminal === undefined) {
    void vscode.window.showInformationMessage('trainmedic: no terminal is open.');
    return;
  }
  const text = tailText(await terminalText(terminal), MAX_TERMINAL_CHARS);
  if (!text.trim()) {
    void vscode.window.showInformationMessage('trainmedic: the terminal has no output to diagnose.');
    return;
  }
  await report(`terminal "${terminal.name}"`, () => serverCommandCall(DIAGNOSE_TEXT, [text, '<terminal>']));
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  context.subscriptions.push(
    vscode.commands.registerCommand('trainmedic.diagnoseSelection', diagnoseSelection),
    vscode.commands.registerCommand('trainmedic.diagnoseLog', diagnoseLog),
    vscode.commands.registerCommand('trainmedic.diagnoseTerminal', diagnoseTerminal),
    vscode.commands.registerCommand('trainmedic.restartServer', async () => {
      await client?.stop();
      client = undefined;
      await startClient(context);
    }),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (event.affectsConfiguration('trainmedic.serverPath') || event.affectsConfiguration('trainmedic.serverArgs')) {
        await vscode.commands.executeCommand('trainmedic.restartServer');
      }
    }),
  );
  await startClient(context);
}

export async function deactivate(): Promise<void> {
  await client?.stop();
  client = undefined;
}
