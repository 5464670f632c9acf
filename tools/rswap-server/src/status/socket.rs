// SPDX-License-Identifier: GPL-2.0

//! The status socket's file (`--status-socket PATH`): created with mode 0600 (its
//! directory, if missing, with mode 0755), a stale socket left by a server that died
//! replaced, a path in use by a live server or taken by anything but a socket refused,
//! and removed when the server exits, unless the path names another file by then.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

use crate::os;

/// The listening socket and its file.
#[derive(Debug)]
pub(crate) struct StatusSocket {
    listener: UnixListener,
    path: PathBuf,
    /// Device and inode of the socket file this server made.
    file: (u64, u64),
}

impl StatusSocket {
    /// Makes the socket at `path`, listening and nonblocking. The error is one line
    /// naming the option and the path.
    pub(crate) fn bind(path: &Path) -> Result<Self, String> {
        let what = |why: String| format!("--status-socket {}: {why}", path.display());
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dir.exists() {
                fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o755)
                    .create(dir)
                    .map_err(|e| {
                        what(format!(
                            "cannot create the directory {}: {e}",
                            dir.display()
                        ))
                    })?;
            }
        }
        remove_stale(path).map_err(what)?;
        let listener =
            os::bind_unix_private(path).map_err(|e| what(format!("cannot bind: {e}")))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| what(format!("cannot make it nonblocking: {e}")))?;
        let meta = fs::symlink_metadata(path).map_err(|e| what(format!("after bind: {e}")))?;
        let sock = Self {
            listener,
            path: path.to_path_buf(),
            file: (meta.dev(), meta.ino()),
        };
        // Made 0600, less the umask: an umask that took the owner's bits too is undone.
        if meta.mode() & 0o777 != 0o600 {
            fs::set_permissions(path, fs::Permissions::from_mode(0o600))
                .map_err(|e| what(format!("cannot chmod 600: {e}")))?;
        }
        Ok(sock)
    }

    /// The listening socket.
    pub(crate) fn listener(&self) -> &UnixListener {
        &self.listener
    }

    /// Where it is.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for StatusSocket {
    fn drop(&mut self) {
        // Only the file this server made: a server started since on the same path
        // (which replaced it) keeps its own.
        if fs::symlink_metadata(&self.path).is_ok_and(|m| (m.dev(), m.ino()) == self.file) {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Clears the way for the socket: nothing there, or a socket nobody listens on (which
/// is removed). The error says why the path cannot be used.
fn remove_stale(path: &Path) -> Result<(), String> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot look at it: {e}")),
    };
    if !meta.file_type().is_socket() {
        return Err("exists and is not a socket (not replaced)".into());
    }
    match UnixStream::connect(path) {
        Ok(_) => Err("in use: another process (an rswap-server?) is listening on it".into()),
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
            fs::remove_file(path).map_err(|e| format!("cannot remove the stale socket: {e}"))
        }
        Err(e) => Err(format!("cannot tell whether it is in use: {e}")),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A fresh directory for one test, removed when dropped.
    pub(crate) struct TempDir(pub(crate) PathBuf);

    impl TempDir {
        pub(crate) fn new(what: &str) -> Self {
            static N: AtomicU32 = AtomicU32::new(0);
            let dir = std::env::temp_dir().join(format!(
                "rswap-{what}-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).expect("temp dir");
            Self(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path).unwrap().mode() & 0o7777
    }

    #[test]
    fn made_0600_in_a_new_directory_and_removed_at_drop() {
        let tmp = TempDir::new("status-socket");
        let path = tmp.0.join("run/rswap/server.sock");
        let sock = StatusSocket::bind(&path).expect("bind");
        assert_eq!(sock.path(), path);
        assert!(fs::symlink_metadata(&path).unwrap().file_type().is_socket());
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&tmp.0.join("run/rswap")), 0o755);
        // Listening, nonblocking: a connection waits to be accepted, none blocks.
        let _client = UnixStream::connect(&path).expect("connect");
        assert!(sock.listener().accept().is_ok());
        assert_eq!(
            sock.listener().accept().map(|_| ()).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
        drop(sock);
        assert!(!path.exists());
    }

    #[test]
    fn a_stale_socket_is_replaced() {
        let tmp = TempDir::new("status-socket");
        let path = tmp.0.join("s.sock");
        // A socket file whose listener is gone, as a killed server leaves it.
        drop(UnixListener::bind(&path).unwrap());
        assert!(path.exists());
        let sock = StatusSocket::bind(&path).expect("stale socket not replaced");
        assert_eq!(mode(&path), 0o600);
        assert!(UnixStream::connect(&path).is_ok());
        drop(sock);
        assert!(!path.exists());
    }

    #[test]
    fn refusals_are_one_line() {
        let tmp = TempDir::new("status-socket");
        // In use by a live listener.
        let live = tmp.0.join("live.sock");
        let first = StatusSocket::bind(&live).unwrap();
        let e = StatusSocket::bind(&live).unwrap_err();
        assert!(
            e.starts_with(&format!("--status-socket {}: in use", live.display())),
            "{e}"
        );
        assert!(live.exists(), "the live socket was removed");
        drop(first);
        // A regular file is not replaced.
        let file = tmp.0.join("file");
        fs::write(&file, "x").unwrap();
        let e = StatusSocket::bind(&file).unwrap_err();
        assert!(
            e.ends_with("exists and is not a socket (not replaced)"),
            "{e}"
        );
        assert_eq!(fs::read_to_string(&file).unwrap(), "x");
        // A directory that cannot be made (under a regular file).
        let e = StatusSocket::bind(&file.join("sub/s.sock")).unwrap_err();
        assert!(e.contains("cannot create the directory"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }

    #[test]
    fn drop_leaves_a_file_that_replaced_ours() {
        let tmp = TempDir::new("status-socket");
        let path = tmp.0.join("s.sock");
        let sock = StatusSocket::bind(&path).unwrap();
        fs::remove_file(&path).unwrap();
        fs::write(&path, "someone else's").unwrap();
        drop(sock);
        assert_eq!(fs::read_to_string(&path).unwrap(), "someone else's");
    }
}
