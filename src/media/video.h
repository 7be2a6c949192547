/*
 * MP4 output through FFmpeg's libraries (libavcodec, libavformat,
 * libswscale), and a small probe to read back what was written.
 *
 * The encoder is H.264 via libx264 when libavcodec has it (Debian's does),
 * else MPEG-4 part 2, which every libavcodec has.  Frames go from RGB24 to
 * yuv420p (BT.601, limited range, flagged as such in the stream), the
 * format every player decodes.  yuv420p subsamples chroma by 2 in both
 * directions, so an odd width or height is padded to the next even size by
 * repeating the last column or row; the video is then 1 pixel wider or
 * taller than the frames.
 *
 * Built without FFmpeg, both functions fail with SVP_ERR_UNSUPPORTED (and
 * frames can still be written as PNG).
 */
#ifndef SVP_MEDIA_VIDEO_H
#define SVP_MEDIA_VIDEO_H

#include "media/frames.h"

typedef struct {
    int         fps;     /* frames per second (diffusers' export: 7) */
    int         quality; /* libx264 CRF 0..51 (lower is better); mpeg4
                             uses quality / 6 + 1 as its fixed quantiser */
    const char *encoder; /* libavcodec encoder name, NULL: libx264 if
                             available, else mpeg4 */
} svp_media_video_params_t;

/* fps 7, quality 18 (visually lossless for x264), encoder NULL. */
void svp_media_video_params_init(svp_media_video_params_t *params);

/*
 * Encodes all frames into an MP4 at path, atomically: the file is written
 * as "<path>.tmp.<pid>", fsync'ed and renamed.  On failure nothing is left
 * at path and an older file there is untouched.
 */
svp_status_t svp_media_video_write_mp4(const char                     *path,
                                       const svp_media_frames_t       *frames,
                                       const svp_media_video_params_t *params);

typedef struct {
    int    num_streams;
    int    width; /* of the first video stream */
    int    height;
    int    num_frames; /* its packets, counted by demuxing the file */
    double fps;        /* its average frame rate */
    char   codec[32];  /* its codec name, e.g. "h264" */
} svp_media_video_info_t;

/* Opens a video file and describes its first video stream. */
svp_status_t svp_media_video_probe(const char *path, svp_media_video_info_t *info_p);

#endif
