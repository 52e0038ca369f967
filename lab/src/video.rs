//! Writing rendered frames ([`moreau::render::Image`]) as a video: GIF by
//! the `gif` crate, MP4 through the system's `ffmpeg` (H.264, yuv420p),
//! chosen by the file's extension. What cannot be written is said before
//! any frame is made: an unknown extension, an MP4 without `ffmpeg`, a
//! size the format cannot hold.

use moreau::render::Image;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// Why a video cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum VideoError {
    #[error("{0}: unknown video extension, use .gif or .mp4")]
    Extension(PathBuf),
    #[error(
        "{0}: writing MP4 needs `ffmpeg` on the PATH, and none was found (install it, e.g. `apt-get install ffmpeg`, or write a .gif)"
    )]
    NoFfmpeg(PathBuf),
    #[error("{path}: {width} x {height} frames: {why}")]
    Size {
        path: PathBuf,
        width: u32,
        height: u32,
        why: &'static str,
    },
    #[error("{path}: frame {frame} is {got}, the video's frames are {want}")]
    FrameSize {
        path: PathBuf,
        frame: usize,
        got: String,
        want: String,
    },
    #[error("{path}: frames per second {fps}: must be 1 to 100")]
    Fps { path: PathBuf, fps: f64 },
    #[error("{path}: {why}")]
    Write { path: PathBuf, why: String },
}

enum Sink {
    Gif(gif::Encoder<std::io::BufWriter<std::fs::File>>),
    Ffmpeg(Child),
}

/// A video being written.
pub struct VideoWriter {
    path: PathBuf,
    width: u32,
    height: u32,
    /// A GIF frame's delay (hundredths of a second).
    delay: u16,
    frames: usize,
    sink: Sink,
}

/// Whether `ffmpeg` runs.
pub fn ffmpeg_available() -> bool {
    Command::new("ffmpeg")
        .arg("-version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Checks that a video of `width` × `height` at `fps` can be written to
/// `path`, before anything is simulated or drawn.
pub fn check(path: &Path, width: u32, height: u32, fps: f64) -> Result<(), VideoError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    if !(fps.is_finite() && (1.0..=100.0).contains(&fps)) {
        return Err(VideoError::Fps {
            path: path.into(),
            fps,
        });
    }
    let size = |why| VideoError::Size {
        path: path.into(),
        width,
        height,
        why,
    };
    match ext.as_deref() {
        Some("gif") if width > u16::MAX as u32 || height > u16::MAX as u32 => {
            Err(size("a GIF's sides are at most 65535 pixels"))
        }
        Some("gif") => Ok(()),
        Some("mp4") if width % 2 == 1 || height % 2 == 1 => {
            Err(size("H.264 in yuv420p needs even sides"))
        }
        Some("mp4") if !ffmpeg_available() => Err(VideoError::NoFfmpeg(path.into())),
        Some("mp4") => Ok(()),
        _ => Err(VideoError::Extension(path.into())),
    }
}

impl VideoWriter {
    /// A video of `width` × `height` frames shown at `fps` frames per
    /// second (a GIF's delays are whole hundredths: 1/fps rounded).
    pub fn create(path: &Path, width: u32, height: u32, fps: f64) -> Result<Self, VideoError> {
        check(path, width, height, fps)?;
        let fail = |why: String| VideoError::Write {
            path: path.into(),
            why,
        };
        let gif = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("gif"));
        let sink = if gif {
            let file = std::fs::File::create(path).map_err(|e| fail(e.to_string()))?;
            let mut encoder = gif::Encoder::new(
                std::io::BufWriter::new(file),
                width as u16,
                height as u16,
                &[],
            )
            .map_err(|e| fail(e.to_string()))?;
            encoder
                .set_repeat(gif::Repeat::Infinite)
                .map_err(|e| fail(e.to_string()))?;
            Sink::Gif(encoder)
        } else {
            let child = Command::new("ffmpeg")
                .args([
                    "-y",
                    "-loglevel",
                    "error",
                    "-f",
                    "rawvideo",
                    "-pix_fmt",
                    "rgb24",
                ])
                .args(["-s", &format!("{width}x{height}"), "-r", &fps.to_string()])
                .args(["-i", "-", "-c:v", "libx264", "-pix_fmt", "yuv420p"])
                .arg(path)
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| fail(format!("starting ffmpeg: {e}")))?;
            Sink::Ffmpeg(child)
        };
        Ok(VideoWriter {
            path: path.into(),
            width,
            height,
            delay: (100.0 / fps).round().max(1.0) as u16,
            frames: 0,
            sink,
        })
    }

    /// Appends a frame of the video's size.
    pub fn push(&mut self, image: &Image) -> Result<(), VideoError> {
        if (image.width, image.height) != (self.width, self.height) {
            return Err(VideoError::FrameSize {
                path: self.path.clone(),
                frame: self.frames,
                got: format!("{} x {}", image.width, image.height),
                want: format!("{} x {}", self.width, self.height),
            });
        }
        let fail = |why: String| VideoError::Write {
            path: self.path.clone(),
            why,
        };
        match &mut self.sink {
            Sink::Gif(encoder) => {
                let mut frame = gif::Frame::from_rgb_speed(
                    self.width as u16,
                    self.height as u16,
                    &image.rgb,
                    10,
                );
                frame.delay = self.delay;
                encoder
                    .write_frame(&frame)
                    .map_err(|e| fail(e.to_string()))?;
            }
            Sink::Ffmpeg(child) => {
                let stdin = child.stdin.as_mut().expect("ffmpeg's input is piped");
                stdin
                    .write_all(&image.rgb)
                    .map_err(|e| fail(format!("ffmpeg: {e}")))?;
            }
        }
        self.frames += 1;
        Ok(())
    }

    /// Finishes the file; returns the number of frames written.
    pub fn finish(self) -> Result<usize, VideoError> {
        let fail = |why: String| VideoError::Write {
            path: self.path.clone(),
            why,
        };
        match self.sink {
            Sink::Gif(encoder) => {
                let mut w = encoder.into_inner().map_err(|e| fail(e.to_string()))?;
                w.flush().map_err(|e| fail(e.to_string()))?;
            }
            Sink::Ffmpeg(mut child) => {
                drop(child.stdin.take());
                let out = child
                    .wait_with_output()
                    .map_err(|e| fail(format!("ffmpeg: {e}")))?;
                if !out.status.success() {
                    return Err(fail(format!(
                        "ffmpeg failed ({}): {}",
                        out.status,
                        String::from_utf8_lossy(&out.stderr).trim()
                    )));
                }
            }
        }
        Ok(self.frames)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(width: u32, height: u32, shade: u8) -> Image {
        Image {
            width,
            height,
            rgb: vec![shade; (width * height * 3) as usize],
            depth: vec![0.0; (width * height) as usize],
        }
    }

    #[test]
    fn a_gif_holds_its_frames_and_bad_requests_are_refused() {
        let dir = std::env::temp_dir().join(format!("moreau-video-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("v.gif");
        let mut w = VideoWriter::create(&path, 16, 8, 25.0).unwrap();
        for shade in [0, 128, 255] {
            w.push(&image(16, 8, shade)).unwrap();
        }
        let e = w.push(&image(8, 8, 0)).unwrap_err().to_string();
        assert!(e.contains("frame 3 is 8 x 8"), "{e}");
        assert_eq!(w.finish().unwrap(), 3);
        // Read back: three frames of 16 × 8, 4 hundredths each, their shades.
        let mut options = gif::DecodeOptions::new();
        options.set_color_output(gif::ColorOutput::RGBA);
        let mut decoder = options
            .read_info(std::fs::File::open(&path).unwrap())
            .unwrap();
        let mut shades = Vec::new();
        while let Some(frame) = decoder.read_next_frame().unwrap() {
            assert_eq!((frame.width, frame.height, frame.delay), (16, 8, 4));
            shades.push(frame.buffer[0]);
        }
        assert_eq!(shades.len(), 3);
        assert!(shades[0] < 8 && (120..=136).contains(&shades[1]) && shades[2] > 247);
        let e = check(&dir.join("v.avi"), 16, 8, 25.0).unwrap_err();
        assert!(e.to_string().contains("use .gif or .mp4"));
        let e = check(&dir.join("v.mp4"), 15, 8, 25.0).unwrap_err();
        assert!(e.to_string().contains("even sides"));
        assert!(check(&path, 16, 8, 0.0).is_err());
        // MP4: written where ffmpeg is, else refused by name before anything.
        let mp4 = dir.join("v.mp4");
        if ffmpeg_available() {
            let mut w = VideoWriter::create(&mp4, 16, 8, 25.0).unwrap();
            for shade in [0, 128, 255] {
                w.push(&image(16, 8, shade)).unwrap();
            }
            assert_eq!(w.finish().unwrap(), 3);
            let bytes = std::fs::read(&mp4).unwrap();
            assert_eq!(&bytes[4..8], b"ftyp", "an MP4 starts with its ftyp box");
        } else {
            let e = check(&mp4, 16, 8, 25.0).unwrap_err().to_string();
            assert!(e.contains("needs `ffmpeg`"), "{e}");
            assert!(!mp4.exists());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
