//! A response body's framing decoded as it arrives: chunked, length-delimited or ended by the
//! connection's close, byte by byte where it must be and in runs of body bytes otherwise.

use super::Framing;

/// Where a chunked body's decoder stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ChunkState {
    /// Reading the hex size line; the size so far, and whether an extension started.
    Size(u64, bool),
    /// Expecting the LF of the size line.
    SizeLf(u64),
    /// Inside chunk data, with this much left.
    Data(u64),
    /// Expecting CR then LF after the data.
    DataCr,
    DataLf,
    /// Reading trailer lines; whether the current line is empty so far.
    Trailer(bool),
    /// Expecting the LF of the last (empty) line.
    TrailerLf(bool),
    /// The body has ended.
    Done,
}

/// Incremental decoder of a body's framing: gives the body's bytes as slices of the input.
#[derive(Clone, Copy, Debug)]
pub struct BodyDecoder {
    framing: Framing,
    chunk: ChunkState,
    /// Bytes came after the body's end: the connection carries something nobody asked for.
    overran: bool,
}

impl BodyDecoder {
    /// A decoder at the start of a body.
    pub fn new(framing: Framing) -> Self {
        Self {
            framing,
            chunk: ChunkState::Size(0, false),
            overran: false,
        }
    }

    /// Whether bytes came after the body's end (a connection that carried them is not kept).
    pub fn overran(&self) -> bool {
        self.overran
    }

    /// Whether the body ends where the connection closes (no length, not chunked).
    pub fn is_close_framed(&self) -> bool {
        matches!(self.framing, Framing::Close)
    }

    /// Whether the body has ended.
    pub fn done(&self) -> bool {
        match self.framing {
            Framing::Chunked => self.chunk == ChunkState::Done,
            Framing::Length(left) => left == 0,
            Framing::Close => false,
        }
    }

    /// Decodes `input`, calling `data` with each run of body bytes; bytes after the body's end
    /// are ignored (and remembered: [`BodyDecoder::overran`]). An error when the framing is
    /// broken.
    pub fn feed(&mut self, mut input: &[u8], data: &mut impl FnMut(&[u8])) -> Result<(), String> {
        match &mut self.framing {
            Framing::Close => {
                data(input);
                return Ok(());
            }
            Framing::Length(left) => {
                let take = input
                    .len()
                    .min(usize::try_from(*left).unwrap_or(usize::MAX));
                if take > 0 {
                    data(&input[..take]);
                }
                *left -= take as u64;
                self.overran |= take < input.len();
                return Ok(());
            }
            Framing::Chunked => {}
        }
        while !input.is_empty() {
            match self.chunk {
                ChunkState::Data(left) => {
                    let take = input.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    data(&input[..take]);
                    input = &input[take..];
                    let left = left - take as u64;
                    self.chunk = if left == 0 {
                        ChunkState::DataCr
                    } else {
                        ChunkState::Data(left)
                    };
                }
                ChunkState::Done => {
                    self.overran = true;
                    return Ok(());
                }
                state => {
                    self.chunk = chunk_byte(state, input[0])?;
                    input = &input[1..];
                }
            }
        }
        Ok(())
    }
}

/// The framing state after one byte outside chunk data.
fn chunk_byte(state: ChunkState, byte: u8) -> Result<ChunkState, String> {
    use ChunkState::{Data, DataCr, DataLf, Done, Size, SizeLf, Trailer, TrailerLf};
    let broken = || Err(format!("broken chunked encoding at byte {byte:#04x}"));
    Ok(match (state, byte) {
        (Size(n, false), b) if b.is_ascii_hexdigit() => {
            let digit = u64::from((b as char).to_digit(16).unwrap_or(0));
            if n >= 1 << 56 {
                return Err("chunk size too large".into());
            }
            Size(n * 16 + digit, false)
        }
        (Size(n, _), b'\r') => SizeLf(n),
        (Size(n, _) | SizeLf(n), b'\n') => {
            if n == 0 {
                Trailer(true)
            } else {
                Data(n)
            }
        }
        (Size(n, false), b';' | b' ' | b'\t') | (Size(n, true), _) => Size(n, true),
        (DataCr, b'\r') => DataLf,
        (DataCr | DataLf, b'\n') => Size(0, false),
        (Trailer(empty), b'\r') => TrailerLf(empty),
        (Trailer(true) | TrailerLf(true), b'\n') => Done,
        (Trailer(false) | TrailerLf(false), b'\n') => Trailer(true),
        (Trailer(_), _) => Trailer(false),
        _ => return broken(),
    })
}
