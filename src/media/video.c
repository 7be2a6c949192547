/*
 * MP4 writing and probing with FFmpeg's libraries.
 *
 * Every libav* failure is converted to our status once, by
 * SVP_MEDIA_AV_FUNC, which logs the call, the file and FFmpeg's own error
 * string.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "media/video.h"
#include "common/log.h"
#include "common/file.h"
#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void svp_media_video_params_init(svp_media_video_params_t *params)
{
    params->fps     = 7;
    params->quality = 18;
    params->encoder = NULL;
}

#ifdef HAVE_FFMPEG

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>

#define SVP_MEDIA_MP4_MAX_FPS 240

/* libswscale's RGB24 input loops read past the last pixel of the last row:
 * fed the frames buffer directly, 14 frames of 64x48 faulted at the end of
 * the buffer (found with AddressSanitizer, FFmpeg 5.1).  With a guard page
 * after the source, RGB24 -> yuv420p read at most 22 bytes too far for
 * every even width 2..256 and 1000..1040.  The source is therefore always
 * our own copy with this much slack after it. */
#define SVP_MEDIA_SWS_SLACK 64

/*
 * FFmpeg prints to stderr by default, and libx264 is chatty (a dozen lines
 * of statistics per file at "info").  Its messages go through our logger
 * instead: errors and warnings as warnings (the failure itself is logged
 * once, as an error, where the call returns), info as debug.  The callback
 * is process-wide, so it is installed once.
 */
static void svp_media_av_log_cb(void *avcl, int level, const char *fmt, va_list ap)
{
    static __thread int prefix = 1;
    svp_log_level_t     ours;
    char                line[1024];
    size_t              len;

    ours = (level <= AV_LOG_WARNING) ? SVP_LOG_LEVEL_WARN
           : (level <= AV_LOG_INFO)  ? SVP_LOG_LEVEL_DEBUG
                                     : SVP_LOG_LEVEL_TRACE;
    if (level > AV_LOG_DEBUG || !svp_log_enabled(ours)) {
        return;
    }
    av_log_format_line2(avcl, level, fmt, ap, line, sizeof(line), &prefix);
    len = strlen(line);
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) {
        line[--len] = '\0';
    }
    if (len > 0) {
        svp_log(ours, "ffmpeg: %s", line);
    }
}

static pthread_once_t svp_media_av_log_once = PTHREAD_ONCE_INIT;

static void svp_media_av_log_install(void)
{
    av_log_set_callback(svp_media_av_log_cb);
}

static svp_status_t svp_media_av_status(int ret, const char *call, const char *path)
{
    char msg[AV_ERROR_MAX_STRING_SIZE];

    if (ret >= 0) {
        return SVP_OK;
    }
    av_make_error_string(msg, sizeof(msg), ret);
    svp_error("%s: %s failed: %s", path, call, msg);
    return (ret == AVERROR(ENOMEM)) ? SVP_ERR_NO_MEMORY : SVP_ERR_IO;
}

/* Runs an FFmpeg call returning an int, converting a negative result. */
#define SVP_MEDIA_AV_FUNC(_path, _call) svp_media_av_status((_call), #_call, (_path))

typedef struct {
    const char        *path; /* final name, for messages */
    char              *tmp;  /* the file actually written */
    AVFormatContext   *fmt;
    AVCodecContext    *enc;
    AVStream          *stream;
    AVFrame           *frame;
    AVPacket          *pkt;
    struct SwsContext *sws;
    uint8_t           *padded; /* even-sized RGB copy of one frame, with
                                     SVP_MEDIA_SWS_SLACK bytes after it */
    int                width;  /* encoded (even) size */
    int                height;
} svp_media_mp4_writer_t;

static const AVCodec *svp_media_pick_encoder(const char *name, const char *path)
{
    const AVCodec *codec;

    if (name != NULL) {
        codec = avcodec_find_encoder_by_name(name);
        if (codec == NULL) {
            svp_error("%s: libavcodec has no encoder '%s'", path, name);
        }
        return codec;
    }
    codec = avcodec_find_encoder_by_name("libx264");
    if (codec != NULL) {
        return codec;
    }
    codec = avcodec_find_encoder(AV_CODEC_ID_MPEG4);
    if (codec == NULL) {
        svp_error("%s: libavcodec has neither libx264 nor mpeg4", path);
        return NULL;
    }
    svp_warn("%s: libavcodec has no libx264, writing MPEG-4 part 2", path);
    return codec;
}

static svp_status_t svp_media_mp4_open(svp_media_mp4_writer_t         *wr,
                                       const svp_media_video_params_t *params)
{
    const AVCodec *codec;
    char           crf[16];
    svp_status_t   status;

    codec = svp_media_pick_encoder(params->encoder, wr->path);
    if (codec == NULL) {
        return SVP_ERR_UNSUPPORTED;
    }
    status =
        SVP_MEDIA_AV_FUNC(wr->path, avformat_alloc_output_context2(&wr->fmt, NULL,
                                                                   "mp4", wr->tmp));
    if (status != SVP_OK) {
        return status;
    }
    wr->stream = avformat_new_stream(wr->fmt, NULL);
    wr->enc    = avcodec_alloc_context3(codec);
    wr->frame  = av_frame_alloc();
    wr->pkt    = av_packet_alloc();
    if (wr->stream == NULL || wr->enc == NULL || wr->frame == NULL ||
        wr->pkt == NULL) {
        svp_error("%s: no memory for the encoder", wr->path);
        return SVP_ERR_NO_MEMORY;
    }

    wr->enc->width     = wr->width;
    wr->enc->height    = wr->height;
    wr->enc->pix_fmt   = AV_PIX_FMT_YUV420P;
    wr->enc->time_base = (AVRational){1, params->fps};
    wr->enc->framerate = (AVRational){params->fps, 1};
    wr->enc->gop_size  = params->fps;
    /* what libswscale's default RGB -> YUV matrix produces */
    wr->enc->color_range     = AVCOL_RANGE_MPEG;
    wr->enc->colorspace      = AVCOL_SPC_SMPTE170M;
    wr->enc->color_primaries = AVCOL_PRI_SMPTE170M;
    wr->enc->color_trc       = AVCOL_TRC_SMPTE170M;
    if (wr->fmt->oformat->flags & AVFMT_GLOBALHEADER) {
        wr->enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    }
    /* one encoder thread: libx264's frame threads under load make other
     * bytes from the same frames (its rate control sees the frames in
     * another order), and a video's bytes must depend on its frames alone
     * (WebDataset shards are compared byte for byte) */
    wr->enc->thread_count = 1;
    if (codec->id == AV_CODEC_ID_H264) {
        snprintf(crf, sizeof(crf), "%d", params->quality);
        av_opt_set(wr->enc->priv_data, "crf", crf, 0);
    } else {
        wr->enc->flags |= AV_CODEC_FLAG_QSCALE;
        wr->enc->global_quality = FF_QP2LAMBDA * (params->quality / 6 + 1);
    }

    status = SVP_MEDIA_AV_FUNC(wr->path, avcodec_open2(wr->enc, codec, NULL));
    if (status != SVP_OK) {
        return status;
    }
    status = SVP_MEDIA_AV_FUNC(wr->path,
                               avcodec_parameters_from_context(wr->stream->codecpar,
                                                               wr->enc));
    if (status != SVP_OK) {
        return status;
    }
    wr->stream->time_base      = wr->enc->time_base;
    wr->stream->avg_frame_rate = wr->enc->framerate;

    wr->frame->format = AV_PIX_FMT_YUV420P;
    wr->frame->width  = wr->width;
    wr->frame->height = wr->height;
    status = SVP_MEDIA_AV_FUNC(wr->path, av_frame_get_buffer(wr->frame, 0));
    if (status != SVP_OK) {
        return status;
    }
    wr->sws = sws_getContext(wr->width, wr->height, AV_PIX_FMT_RGB24, wr->width,
                             wr->height, AV_PIX_FMT_YUV420P, SWS_BICUBIC, NULL, NULL,
                             NULL);
    if (wr->sws == NULL) {
        svp_error("%s: sws_getContext failed for %dx%d RGB24 -> yuv420p", wr->path,
                  wr->width, wr->height);
        return SVP_ERR_INTERNAL;
    }

    status = SVP_MEDIA_AV_FUNC(wr->path,
                               avio_open(&wr->fmt->pb, wr->tmp, AVIO_FLAG_WRITE));
    if (status != SVP_OK) {
        return status;
    }
    return SVP_MEDIA_AV_FUNC(wr->path, avformat_write_header(wr->fmt, NULL));
}

/* Sends one frame (NULL: flush) and writes every packet that comes out. */
static svp_status_t svp_media_mp4_encode(svp_media_mp4_writer_t *wr, AVFrame *frame)
{
    svp_status_t status;
    int          ret;

    status = SVP_MEDIA_AV_FUNC(wr->path, avcodec_send_frame(wr->enc, frame));
    if (status != SVP_OK) {
        return status;
    }
    for (;;) {
        ret = avcodec_receive_packet(wr->enc, wr->pkt);
        if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF) {
            return SVP_OK;
        }
        status = svp_media_av_status(ret, "avcodec_receive_packet", wr->path);
        if (status != SVP_OK) {
            return status;
        }
        av_packet_rescale_ts(wr->pkt, wr->enc->time_base, wr->stream->time_base);
        wr->pkt->stream_index = wr->stream->index;
        /* takes the packet's reference, leaves pkt blank */
        status = SVP_MEDIA_AV_FUNC(wr->path,
                                   av_interleaved_write_frame(wr->fmt, wr->pkt));
        if (status != SVP_OK) {
            return status;
        }
    }
}

/* The RGB source of frame f at the encoded size, copied into our own
 * buffer: the last column and row are repeated when a side is odd, and the
 * buffer ends in slack that libswscale's vector input loops may read. */
static const uint8_t *svp_media_mp4_source(svp_media_mp4_writer_t   *wr,
                                           const svp_media_frames_t *frames, int f)
{
    const uint8_t *src =
        frames->pixels + (size_t)f * frames->height * frames->width * 3;
    size_t in_stride  = (size_t)frames->width * 3;
    size_t out_stride = (size_t)wr->width * 3;
    int    y;

    for (y = 0; y < wr->height; ++y) {
        const uint8_t *srow =
            src + (size_t)SVP_MIN(y, frames->height - 1) * in_stride;
        uint8_t *drow = wr->padded + (size_t)y * out_stride;

        memcpy(drow, srow, in_stride);
        if (wr->width > frames->width) {
            memcpy(drow + in_stride, srow + in_stride - 3, 3);
        }
    }
    return wr->padded;
}

static svp_status_t svp_media_mp4_write_frames(svp_media_mp4_writer_t   *wr,
                                               const svp_media_frames_t *frames)
{
    /* sws_scale reads four plane pointers and strides whatever the format:
     * unused ones must be there, and NULL/0 */
    const uint8_t *src[4]    = {NULL, NULL, NULL, NULL};
    int            stride[4] = {wr->width * 3, 0, 0, 0};
    svp_status_t   status;
    int            f;

    for (f = 0; f < frames->num_frames; ++f) {
        status = SVP_MEDIA_AV_FUNC(wr->path, av_frame_make_writable(wr->frame));
        if (status != SVP_OK) {
            return status;
        }
        src[0] = svp_media_mp4_source(wr, frames, f);
        sws_scale(wr->sws, src, stride, 0, wr->height, wr->frame->data,
                  wr->frame->linesize);
        wr->frame->pts = f;
        status         = svp_media_mp4_encode(wr, wr->frame);
        if (status != SVP_OK) {
            return status;
        }
    }
    status = svp_media_mp4_encode(wr, NULL);
    if (status != SVP_OK) {
        return status;
    }
    return SVP_MEDIA_AV_FUNC(wr->path, av_write_trailer(wr->fmt));
}

static svp_status_t svp_media_fsync_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0 || fsync(fd) != 0) {
        svp_error("cannot fsync %s: %m", path);
        if (fd >= 0) {
            close(fd);
        }
        return SVP_ERR_IO;
    }
    close(fd);
    return SVP_OK;
}

static void svp_media_mp4_cleanup(svp_media_mp4_writer_t *wr)
{
    sws_freeContext(wr->sws);
    av_packet_free(&wr->pkt);
    av_frame_free(&wr->frame);
    avcodec_free_context(&wr->enc);
    if (wr->fmt != NULL) {
        avio_closep(&wr->fmt->pb);
        avformat_free_context(wr->fmt);
    }
    free(wr->padded);
}

svp_status_t svp_media_video_write_mp4(const char                     *path,
                                       const svp_media_frames_t       *frames,
                                       const svp_media_video_params_t *params)
{
    svp_media_mp4_writer_t wr = {.path = path};
    svp_status_t           status;

    if (params->fps < 1 || params->fps > SVP_MEDIA_MP4_MAX_FPS ||
        params->quality < 0 || params->quality > 51) {
        svp_error("%s: fps %d must be in 1..%d and quality %d in 0..51", path,
                  params->fps, SVP_MEDIA_MP4_MAX_FPS, params->quality);
        return SVP_ERR_INVALID_PARAM;
    }
    pthread_once(&svp_media_av_log_once, svp_media_av_log_install);
    if (asprintf(&wr.tmp, "%s.tmp.%s", path, svp_tmp_tag()) < 0) {
        return SVP_ERR_NO_MEMORY;
    }
    wr.width  = (frames->width + 1) & ~1;
    wr.height = (frames->height + 1) & ~1;
    wr.padded = calloc((size_t)wr.width * wr.height * 3 + SVP_MEDIA_SWS_SLACK, 1);
    if (wr.padded == NULL) {
        status = SVP_ERR_NO_MEMORY;
        goto err_remove_tmp;
    }

    status = svp_media_mp4_open(&wr, params);
    if (status != SVP_OK) {
        goto err_remove_tmp;
    }
    status = svp_media_mp4_write_frames(&wr, frames);
    if (status != SVP_OK) {
        goto err_remove_tmp;
    }
    status = SVP_MEDIA_AV_FUNC(path, avio_closep(&wr.fmt->pb));
    if (status != SVP_OK) {
        goto err_remove_tmp;
    }
    status = svp_media_fsync_file(wr.tmp);
    if (status != SVP_OK) {
        goto err_remove_tmp;
    }
    if (rename(wr.tmp, path) != 0) {
        svp_error("rename %s -> %s failed: %m", wr.tmp, path);
        status = SVP_ERR_IO;
        goto err_remove_tmp;
    }
    svp_media_mp4_cleanup(&wr);
    free(wr.tmp);
    return SVP_OK;

err_remove_tmp:
    svp_media_mp4_cleanup(&wr);
    unlink(wr.tmp);
    free(wr.tmp);
    return status;
}

svp_status_t svp_media_video_probe(const char *path, svp_media_video_info_t *info_p)
{
    AVFormatContext       *fmt = NULL;
    AVPacket              *pkt;
    AVStream              *st;
    svp_media_video_info_t info;
    svp_status_t           status;
    int                    index, ret;

    pthread_once(&svp_media_av_log_once, svp_media_av_log_install);
    status = SVP_MEDIA_AV_FUNC(path, avformat_open_input(&fmt, path, NULL, NULL));
    if (status != SVP_OK) {
        return status;
    }
    status = SVP_MEDIA_AV_FUNC(path, avformat_find_stream_info(fmt, NULL));
    if (status != SVP_OK) {
        goto out_close;
    }
    index = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    if (index < 0) {
        svp_error("%s: no video stream", path);
        status = SVP_ERR_BAD_FILE;
        goto out_close;
    }
    st = fmt->streams[index];
    memset(&info, 0, sizeof(info));
    info.num_streams = (int)fmt->nb_streams;
    info.width       = st->codecpar->width;
    info.height      = st->codecpar->height;
    info.fps         = av_q2d(st->avg_frame_rate);
    snprintf(info.codec, sizeof(info.codec), "%s",
             avcodec_get_name(st->codecpar->codec_id));

    pkt = av_packet_alloc();
    if (pkt == NULL) {
        status = SVP_ERR_NO_MEMORY;
        goto out_close;
    }
    while ((ret = av_read_frame(fmt, pkt)) >= 0) {
        info.num_frames += (pkt->stream_index == index);
        av_packet_unref(pkt);
    }
    av_packet_free(&pkt);
    if (ret != AVERROR_EOF) {
        status = svp_media_av_status(ret, "av_read_frame", path);
        goto out_close;
    }
    *info_p = info;

out_close:
    avformat_close_input(&fmt);
    return status;
}

#else /* !HAVE_FFMPEG */

svp_status_t svp_media_video_write_mp4(const char                     *path,
                                       const svp_media_frames_t       *frames,
                                       const svp_media_video_params_t *params)
{
    svp_error("%s: cannot write MP4: built without FFmpeg's libraries", path);
    return SVP_ERR_UNSUPPORTED;
}

svp_status_t svp_media_video_probe(const char *path, svp_media_video_info_t *info_p)
{
    svp_error("%s: cannot read video: built without FFmpeg's libraries", path);
    return SVP_ERR_UNSUPPORTED;
}

#endif /* HAVE_FFMPEG */
