import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useRef, useState, type FormEvent } from 'react';
import { encodedFilePath, path } from '../api/client';
import type { Directory, FileEntry } from '../api/types';
import { useSession } from '../session';
import { ConfirmDialog } from '../ui/confirm-dialog';
import { Empty, ErrorNote, Loading, TableScroll } from '../ui/feedback';
import { formatBytes, formatTime } from '../ui/format';

/** A file of up to FILE_UPLOAD_MAX_BYTES (100 MiB) on a slow link. */
const TRANSFER_TIMEOUT_MS = 15 * 60_000;

const join = (dir: string, name: string) => (dir === '' ? name : `${dir}/${name}`);

/** The workspace's files (interface section 21): browse, upload, download, delete. Names are shown as text only. */
export function FilesPanel({ internId }: { internId: string }) {
  const { client } = useSession();
  const queryClient = useQueryClient();
  const [dir, setDir] = useState('');
  const filesUrl = (relative: string) => `${path`/interns/${internId}/files`}${relative === '' ? '' : `/${encodedFilePath(relative)}`}`;
  const listing = useQuery({
    queryKey: ['files', internId, dir],
    queryFn: ({ signal }) => client.json<Directory>(filesUrl(dir), { signal }),
  });
  const refresh = () => void queryClient.invalidateQueries({ queryKey: ['files', internId] });

  const download = useMutation({
    mutationFn: async (entry: FileEntry) => {
      const response = await client.send(filesUrl(join(dir, entry.name)), { timeoutMs: TRANSFER_TIMEOUT_MS });
      const url = URL.createObjectURL(await response.blob());
      const anchor = document.createElement('a');
      anchor.href = url;
      anchor.download = entry.name;
      anchor.click();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    },
  });
  const [toDelete, setToDelete] = useState<FileEntry | null>(null);
  const remove = useMutation({
    mutationFn: (entry: FileEntry) =>
      client.json(`${filesUrl(join(dir, entry.name))}${entry.type === 'directory' ? '?recursive=true' : ''}`, { method: 'DELETE' }),
    onSuccess: () => {
      setToDelete(null);
      refresh();
    },
  });

  const segments = dir === '' ? [] : dir.split('/');
  return (
    <div className="stack">
      <h2>Files</h2>
      <nav aria-label="Folder" className="breadcrumbs">
        <ol>
          <li>
            <button type="button" className="link" onClick={() => setDir('')} aria-current={dir === '' ? 'location' : undefined}>
              workspace
            </button>
          </li>
          {segments.map((segment, index) => (
            <li key={segments.slice(0, index + 1).join('/')}>
              <button
                type="button"
                className="link"
                onClick={() => setDir(segments.slice(0, index + 1).join('/'))}
                aria-current={index === segments.length - 1 ? 'location' : undefined}
              >
                {segment}
              </button>
            </li>
          ))}
        </ol>
      </nav>
      <UploadForm onUpload={(file) => client.json(filesUrl(join(dir, file.name)), { method: 'PUT', body: file, timeoutMs: TRANSFER_TIMEOUT_MS })} onDone={refresh} />
      {listing.isPending ? <Loading what="files" /> : null}
      <ErrorNote error={listing.error} />
      <ErrorNote error={download.error} prefix="Download failed" />
      {listing.isSuccess && listing.data.data.length === 0 ? <Empty>This folder is empty: upload files with the form above.</Empty> : null}
      {listing.data !== undefined && listing.data.data.length > 0 ? (
        <TableScroll label="Files in this folder">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Size</th>
                <th scope="col">Modified</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {listing.data.data.map((entry) => (
                <tr key={entry.name}>
                  <th scope="row">
                    {entry.type === 'directory' ? (
                      <button type="button" className="link" onClick={() => setDir(join(dir, entry.name))} aria-label={`Open folder ${entry.name}`}>
                        {entry.name}/
                      </button>
                    ) : (
                      <span className="file-name">{entry.name}</span>
                    )}
                    {entry.type === 'symlink' || entry.type === 'other' ? <span className="hint"> ({entry.type})</span> : null}
                  </th>
                  <td>{entry.type === 'directory' ? '—' : formatBytes(entry.size)}</td>
                  <td>{formatTime(entry.modified_at)}</td>
                  <td>
                    <div className="row-actions">
                      {entry.type === 'file' ? (
                        <button type="button" onClick={() => download.mutate(entry)} aria-label={`Download ${entry.name}`}>
                          Download
                        </button>
                      ) : null}
                      <button type="button" className="danger" onClick={() => setToDelete(entry)} aria-label={`Delete ${entry.name}`}>
                        Delete
                      </button>
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      ) : null}
      {listing.data?.truncated ? <p className="hint">Only the first 1000 entries are shown.</p> : null}
      <ConfirmDialog
        open={toDelete !== null}
        title={`Delete ${toDelete?.name ?? ''}?`}
        confirmLabel="Delete"
        busy={remove.isPending}
        onConfirm={() => toDelete !== null && remove.mutate(toDelete)}
        onCancel={() => setToDelete(null)}
      >
        <p>{toDelete?.type === 'directory' ? 'The folder and everything in it are removed.' : 'The file is removed from the workspace.'}</p>
        <ErrorNote error={remove.error} />
      </ConfirmDialog>
    </div>
  );
}

/** Uploads the chosen files one after another into the folder shown (each replaces a file of the same name). */
function UploadForm({ onUpload, onDone }: { onUpload(file: File): Promise<unknown>; onDone(): void }) {
  const inputId = useId();
  const input = useRef<HTMLInputElement>(null);
  const [chosen, setChosen] = useState<File[]>([]);
  const upload = useMutation({
    mutationFn: async (files: File[]) => {
      for (const file of files) await onUpload(file);
      return files.length;
    },
    onSuccess: () => {
      setChosen([]);
      if (input.current !== null) input.current.value = '';
      onDone();
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (chosen.length > 0) upload.mutate(chosen);
  };
  return (
    <form className="upload" onSubmit={submit}>
      <label htmlFor={inputId}>Files to upload here</label>
      <input id={inputId} ref={input} type="file" multiple onChange={(event) => setChosen([...(event.target.files ?? [])])} />
      <button type="submit" disabled={chosen.length === 0 || upload.isPending}>
        {upload.isPending ? 'Uploading…' : 'Upload'}
      </button>
      {upload.isSuccess ? (
        <span role="status" className="hint">
          Uploaded {upload.data} file{upload.data === 1 ? '' : 's'}.
        </span>
      ) : null}
      <ErrorNote error={upload.error} prefix="Upload failed" />
    </form>
  );
}
